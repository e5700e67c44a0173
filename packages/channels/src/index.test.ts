import { describe, expect, it } from 'vitest';
import {
  builtinChannels,
  CHAT_A_DEFAULTS,
  CHAT_B_DEFAULTS,
  chatAChannel,
  chatAInstanceSchema,
  chatBChannel,
  chatBInstanceSchema,
  logChannel,
  logInstanceSchema,
} from './index.js';

type Schema = { additionalProperties?: unknown; properties: Record<string, { default?: unknown }> };

describe('public API', () => {
  it('exports the three built-in channels with distinct valid names', () => {
    expect(builtinChannels).toEqual([chatAChannel, chatBChannel, logChannel]);
    expect(builtinChannels.map((p) => p.name)).toEqual(['chat_a', 'chat_b', 'log']);
    for (const p of builtinChannels) expect(p.name).toMatch(/^[a-z][a-z0-9_]*$/);
    expect(Object.isFrozen(builtinChannels)).toBe(true);
  });

  it('instance schemas are closed and carry the same defaults as the code', () => {
    for (const schema of [chatAInstanceSchema, chatBInstanceSchema, logInstanceSchema]) {
      expect(schema.additionalProperties).toBe(false);
      expect(schema.type).toBe('object');
    }
    const a = chatAInstanceSchema as unknown as Schema;
    for (const [field, value] of Object.entries(CHAT_A_DEFAULTS))
      expect(a.properties[field]?.default).toBe(value);
    const b = chatBInstanceSchema as unknown as Schema;
    for (const [field, value] of Object.entries(CHAT_B_DEFAULTS))
      expect(b.properties[field]?.default).toBe(value);
    expect(chatAChannel.instanceSchema).toBe(chatAInstanceSchema);
    expect(chatBChannel.instanceSchema).toBe(chatBInstanceSchema);
    expect(logChannel.instanceSchema).toBe(logInstanceSchema);
  });
});
