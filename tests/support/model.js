// A scripted stand-in for the model provider the chat calls (an OpenAI-compatible chat-completions
// endpoint, configured with MODEL_PROVIDER_URL, answering `stream: true` requests as SSE), for
// tests that need whole conversations rather than one canned answer: it calls the tools a real
// model would, reads their results and answers from them.
//
// A conversation is `on(pattern, steps)`: when the user's latest message (the last user message
// that is not tool results fed back by the chat) matches `pattern`, the n-th request since that
// message is answered by `steps[n]`. A step is the answer's text (tool call tags included, see
// `call`) or a function of `{ message, match, results, messages }` returning it, where `results`
// are the tool results fed back since the user's message, in order, as `{ name, status, body }`
// (`body` parsed as JSON when it is JSON). A request no conversation matches is answered with a
// text saying so, which a test sees on the page.

import { createServer } from "node:http";

/** A tool call as the chat's system prompt teaches the model to write it. */
export const call = (name, args = {}) => `<tool_call name="${name}" args=${JSON.stringify(args)}></tool_call>`;

const RESULT = /<tool_result(?: name="([^"]*)")? status="([^"]*)">([\s\S]*?)<\/tool_result>/g;

/** The tool results of one fed-back message. */
function resultsOf(content) {
  return [...content.matchAll(RESULT)].map(([, name, status, text]) => {
    let body = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Error text, not JSON.
    }
    return { name, status, body };
  });
}

const isFeedback = (m) => m.role === "user" && m.content.startsWith("<tool_result");

/** The answer to one request: the matching conversation's step for it. */
function answer(conversations, messages) {
  const start = messages.findLastIndex((m) => m.role === "user" && !isFeedback(m));
  if (start < 0) return "No user message.";
  const message = messages[start].content;
  const since = messages.slice(start + 1);
  const step = since.filter((m) => m.role === "assistant").length;
  const results = since.filter(isFeedback).flatMap((m) => resultsOf(m.content));
  for (const { pattern, steps } of conversations) {
    const match = message.match(pattern);
    if (!match) continue;
    const next = steps[step];
    if (next === undefined) return `The script of "${message}" has no step ${step + 1}.`;
    return typeof next === "function" ? next({ message, match, results, messages }) : next;
  }
  return `No script for "${message}".`;
}

/**
 * Starts the stand-in on a free local port. Returns `{ url, requests, on, close }`: `url` is the
 * MODEL_PROVIDER_URL to configure; `requests` records each request's body.
 */
export async function scriptedModel() {
  const conversations = [];
  const requests = [];
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", async () => {
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        return res.writeHead(400, { "content-type": "application/json" }).end('{"error":"not JSON"}');
      }
      requests.push(body);
      let text;
      try {
        text = answer(conversations, body.messages ?? []);
      } catch (e) {
        text = `The script failed: ${e.message}`;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (delta) => res.write(`data: ${JSON.stringify({ choices: [{ delta }] })}\n\n`);
      send({ role: "assistant" });
      // In a few pieces, as a model streams: the page must put them together.
      const size = Math.max(1, Math.ceil(text.length / 3));
      for (let i = 0; i < text.length; i += size) {
        send({ content: text.slice(i, i + size) });
        await new Promise((r) => setTimeout(r, 5));
      }
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1/chat/completions`,
    requests,
    on(pattern, steps) {
      conversations.push({ pattern, steps });
    },
    close() {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}
