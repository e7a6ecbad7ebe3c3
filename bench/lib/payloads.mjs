// The request the load generator sends and the answer the fake upstream gives: fixed, realistic sizes
// (a ~1 KB request, a ~1.3 KB chat.completion, or the same text streamed as SSE chunks).

export const MODEL = 'bench/gpt-4o-mini';
export const UPSTREAM_MODEL = 'gpt-4o-mini';

const SYSTEM =
  'You are a careful assistant for an engineering team. Answer in plain English, keep answers short, ' +
  'cite the relevant section of the runbook when you can, and say so when you do not know.';
const USER =
  'Our nightly export job started failing after the database upgrade. The log says "relation does not exist" ' +
  'for the staging table, but the migration ran without errors and the table is visible in psql. The job ' +
  'connects with the service account and uses the default search_path. What should I check first, and how ' +
  'do I confirm the cause without touching production data?';

function requestBody(stream) {
  return JSON.stringify({
    model: MODEL,
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: USER },
    ],
    temperature: 0.2,
    max_tokens: 512,
    user: 'bench-user-42',
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}

export const REQUEST_BODY = requestBody(false);
export const STREAM_REQUEST_BODY = requestBody(true);

export const ANSWER =
  'Check the search_path of the service account first. The upgrade most likely reset role-level settings, so ' +
  'the job now resolves the staging table in the public schema instead of the export schema. Run SHOW ' +
  'search_path while connected as the service account and compare it with the value in the runbook (section ' +
  '4.2). To confirm without touching production data, run the job against a read replica with the schema ' +
  'qualified explicitly, or run a SELECT 1 FROM export.staging LIMIT 1 as the service account. If that works, ' +
  'restore the setting with ALTER ROLE ... SET search_path and re-run the job.';

export const USAGE = {
  prompt_tokens: 412,
  completion_tokens: 137,
  total_tokens: 549,
  prompt_tokens_details: { cached_tokens: 128, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 24, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};

/** Split the answer into `n` roughly equal pieces on word boundaries (the stream's content deltas). */
export function answerChunks(n) {
  const words = ANSWER.split(/(?= )/);
  const per = Math.max(1, Math.ceil(words.length / n));
  const out = [];
  for (let i = 0; i < words.length; i += per) out.push(words.slice(i, i + per).join(''));
  return out;
}
