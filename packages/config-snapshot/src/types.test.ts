import { expectTypeOf, it } from 'vitest';
import type { AgentFile, RuntimeFile } from './schemas.js';

it('derives types from the schemas', () => {
  expectTypeOf<AgentFile['inbound_bindings'][number]['plugin']>().toEqualTypeOf<string>();
  expectTypeOf<RuntimeFile['log']['level']>().toEqualTypeOf<'debug' | 'info' | 'warn' | 'error'>();
  expectTypeOf<AgentFile['workspace']>().toEqualTypeOf<string | undefined>();
});
