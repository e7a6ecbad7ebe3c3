// The Vercel AI SDK (`ai` with @ai-sdk/anthropic, @ai-sdk/openai (chat and responses) and @ai-sdk/google) against
// Tollgate: each provider factory gets the gateway as baseURL (`/v1`, or `/v1beta` for Google) and the gateway key;
// models are `<provider>/<model>`. generateText is the one-shot case, streamText the streaming one, a tool with
// `execute` and stopWhen the tool round.

import t from 'tap';
import { startStack } from './helpers.js';
import { libraryCases } from './library.js';

libraryCases(t, await startStack(t), 'ai-sdk');
