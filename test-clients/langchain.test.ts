// LangChain's chat models (ChatAnthropic, ChatOpenAI with and without useResponsesApi, ChatGoogleGenerativeAI)
// against Tollgate: anthropicApiUrl / configuration.baseURL / baseUrl point at the gateway, apiKey is the gateway key,
// models are `<provider>/<model>`. invoke is the one-shot case, stream the streaming one, bindTools with a
// ToolMessage loop the tool round.

import t from 'tap';
import { startStack } from './helpers.js';
import { libraryCases } from './library.js';

libraryCases(t, await startStack(t), 'langchain');
