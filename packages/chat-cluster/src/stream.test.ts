import { describe, expect, it } from 'vitest';
import { ChatClusterError } from './errors.js';
import { fnv1a, inboundMessageId, inboundNames, inboundStreamConfig, partitionOf } from './stream.js';

describe('inbound stream names', () => {
  it('FNV-1a 32 matches the reference vectors', () => {
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
    expect(fnv1a('foobar')).toBe(0xbf9cf968);
  });

  it('a chat always lands in the same partition; the message id names the message', () => {
    const msg = { plugin: 'chat_b', instance: 'main', chatId: '42', messageId: '7' };
    expect(partitionOf(msg, 32)).toBe(fnv1a('chat_b/main/42') % 32);
    const later = { ...msg, messageId: '8', text: 'again' };
    expect(partitionOf(later, 32)).toBe(partitionOf(msg, 32));
    expect(inboundMessageId({ ...msg, senderId: '42', text: 'hi', receivedAt: '' })).toBe('chat_b/main/42/7');
  });

  it('without a prefix: AGENT_INBOUND and agent.inbound.<p>', () => {
    const n = inboundNames();
    expect(n.stream).toBe('AGENT_INBOUND');
    expect(n.subject(3)).toBe('agent.inbound.3');
    expect(n.subjects).toBe('agent.inbound.*');
    expect(n.consumer(3)).toBe('inbound-3');
  });

  it('a prefix with or without its dot gives the same names', () => {
    expect(inboundNames('t1.').stream).toBe('t1_AGENT_INBOUND');
    expect(inboundNames('t1').stream).toBe('t1_AGENT_INBOUND');
    expect(inboundNames('t1.').subject(0)).toBe('t1.agent.inbound.0');
  });

  it('dots in the prefix cannot make two deployments share a stream', () => {
    const dotted = inboundNames('a.b').stream;
    expect(dotted).toMatch(/^a_b_AGENT_INBOUND_[0-9a-f]{8}$/);
    expect(dotted).not.toBe(inboundNames('a_b').stream);
    expect(inboundNames('a.b').subject(1)).toBe('a.b.agent.inbound.1');
  });

  it('refuses a prefix that is not subject tokens', () => {
    for (const bad of ['a b', 'a..b', '*', 'x'.repeat(65), '.']) {
      expect(() => inboundNames(bad)).toThrow(ChatClusterError);
    }
  });

  it('stream settings: file storage, limits, 2 min dedup window', () => {
    const c = inboundStreamConfig(inboundNames('t1'), { maxBytes: 1024 });
    expect(c).toMatchObject({
      name: 't1_AGENT_INBOUND',
      subjects: ['t1.agent.inbound.*'],
      storage: 'file',
      retention: 'limits',
      discard: 'old',
      max_bytes: 1024,
      max_age: 24 * 3600 * 1e9,
      duplicate_window: 120 * 1e9,
      num_replicas: 1,
    });
  });
});
