// The HTTP adapter is loaded at the first request; if it cannot be (a broken install), the request is
// answered 500 and the failure is logged, never left hanging or silent.
import { createMemoryLogger } from '@agent/log';
import { Hono } from 'hono';
import { describe, expect, it, vi } from 'vitest';
import { serveApp } from './serve.js';

vi.mock('@hono/node-server', () => ({
  getRequestListener: () => {
    throw new Error('adapter missing');
  },
}));

describe('serveApp', () => {
  it('answers 500 and logs when the adapter cannot serve a request', async () => {
    const logger = createMemoryLogger();
    const app = new Hono().get('/', (c) => c.text('ok'));
    const served = await serveApp(app, { host: '127.0.0.1', port: 0 }, { logger });
    try {
      const res = await fetch(`${served.url}/`);
      expect(res.status).toBe(500);
      expect(logger.records).toContainEqual(
        expect.objectContaining({
          level: 'error',
          msg: 'http request failed outside the app',
          fields: expect.objectContaining({ method: 'GET', reason: 'adapter missing' }),
        }),
      );
    } finally {
      await served.close();
    }
  });
});
