import type { ChatRequest, ChatResponse, ToolCall } from './types.js';

/** How one vendor API is spoken: where to POST, which headers, and the body both ways. */
export interface ProviderMapping {
  /** Full URL of the chat endpoint for a `base_url` (a trailing slash does not matter). */
  endpoint(baseUrl: string): string;
  headers(apiKey: string): Record<string, string>;
  toRequestBody(req: ChatRequest): Record<string, unknown>;
  /** Reads a 2xx body; throws `BadResponse` when it does not have the documented shape. */
  fromResponseBody(body: unknown): ChatResponse;
  /** The vendor's error text from a non-2xx body, when it has one. */
  errorText(body: unknown): string | undefined;
}

/** A 2xx body that does not match the vendor's documented shape. */
export class BadResponse extends Error {}

export function joinUrl(baseUrl: string, path: string): string {
  return baseUrl.replace(/\/+$/, '') + path;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function nonNegativeInt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
}

/** Parses a tool call's JSON-string arguments; a bad string becomes `argumentsError`, never a throw. */
export function parseToolArguments(id: string, name: string, raw: unknown): ToolCall {
  if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) {
    return { id, name, arguments: {} };
  }
  if (typeof raw !== 'string') return { id, name, arguments: raw };
  try {
    return { id, name, arguments: JSON.parse(raw) as unknown };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return {
      id,
      name,
      arguments: raw,
      argumentsError:
        `The arguments for tool "${name}" were not valid JSON (${why}). ` +
        'Call the tool again with a single JSON object that matches its parameters schema.',
    };
  }
}

/** Anthropic needs an object as tool input; anything else (e.g. unparsed arguments) becomes `{}`. */
export function asObject(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}
