// JSON responses as Octavia's agent writes them, and its two error shapes:
//  - handler errors: {"message": ..., "details": ...}
//  - framework errors (no route, wrong method, bad request): {"error": "<code> <Name>: <text>", "http_code": <code>}
// Which error gets which shape is decided in api/v1/errors.ts.
// Every 404 is JSON: the controller reads a non-JSON 404 as "agent not up yet" and retries.
import type { Response } from 'express';

const FRAMEWORK_TEXT: Record<number, string> = {
  400: 'Bad Request: The browser (or proxy) sent a request that this server could not understand.',
  404: 'Not Found: The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.',
  405: 'Method Not Allowed: The method is not allowed for the requested URL.',
  413: 'Request Entity Too Large: The data value transmitted exceeds the capacity limit.',
  500: 'Internal Server Error: The server encountered an internal error and was unable to complete your request. Either the server is overloaded or there is an error in the application.',
};

export function sendJson(res: Response, status: number, body: unknown): void {
  // Exactly "application/json" without a charset, as Octavia's agent answers.
  const text = Buffer.from(JSON.stringify(body));
  // (express's res.set would append "; charset=utf-8", so use the raw header API.)
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', text.length);
  res.end(text);
}

export function sendMessage(res: Response, status: number, message: string, details?: string): void {
  sendJson(res, status, details === undefined ? { message } : { message, details });
}

/** The framework's error body; `text` replaces the standard description of the status. */
export function frameworkBody(status: number, text?: string): { error: string; http_code: number } {
  const description = text ?? FRAMEWORK_TEXT[status] ?? 'Error';
  return { error: `${status} ${description}`, http_code: status };
}

export function sendFrameworkError(res: Response, status: number, text?: string): void {
  sendJson(res, status, frameworkBody(status, text));
}
