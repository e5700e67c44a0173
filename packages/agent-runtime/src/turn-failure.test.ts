import { describe, expect, it } from 'vitest';
import { turnFailureAction, type TurnFailure, type TurnFailureAction } from './turn-failure.js';

describe('turnFailureAction', () => {
  const table: [TurnFailure, TurnFailureAction][] = [
    // The one case handed back: memory unreadable, nothing sent, the caller can run it again.
    [{ stage: 'history', code: 'RUNTIME_MEMORY_FAILED', canRetry: true }, 'hand_back'],
    // The caller cannot run it again (one host, or its last attempt): the apology as ever.
    [{ stage: 'history', code: 'RUNTIME_MEMORY_FAILED', canRetry: false }, 'apologize'],
    // The turn's timeout cut the read: a timeout keeps the apology.
    [{ stage: 'history', code: 'RUNTIME_TURN_TIMEOUT', canRetry: true }, 'apologize'],
    // Another failure while reading memory (a bug, not the link): the apology.
    [{ stage: 'history', code: 'INTERNAL', canRetry: true }, 'apologize'],
    // After the memory was read: model and tool failures, timeouts keep the apology.
    [{ stage: 'later', code: 'MODEL_AUTH', canRetry: true }, 'apologize'],
    [{ stage: 'later', code: 'RUNTIME_TURN_TIMEOUT', canRetry: true }, 'apologize'],
    [{ stage: 'later', code: 'RUNTIME_MEMORY_FAILED', canRetry: true }, 'apologize'],
    [{ stage: 'later', code: 'MODEL_AUTH', canRetry: false }, 'apologize'],
  ];
  it.each(table)('%o → %s', (failure, action) => {
    expect(turnFailureAction(failure)).toBe(action);
  });
});
