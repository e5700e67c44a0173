/** What a failed turn does: answer with the apology, or hand its message back to be run again. */

/** Where in the turn it failed: reading the conversation memory (nothing sent yet), or later. */
export type TurnFailureStage = 'history' | 'later';

export interface TurnFailure {
  stage: TurnFailureStage;
  /** The failure's code (`RUNTIME_TURN_TIMEOUT` when the turn's timeout cut it). */
  code: string;
  /** The caller can run the message again (`InboundSettle.canRetry`). */
  canRetry: boolean;
}

export type TurnFailureAction = 'apologize' | 'hand_back';

/**
 * A memory that cannot be read is this daemon's failure (cut off from PostgreSQL), not the message's: when
 * the caller can run it again, another attempt (here later, or on another daemon) may answer it properly.
 * Anything else (model, tools, a timeout) would most likely fail again the same way, and a failure after
 * the model ran may already have sent something: those keep the apology.
 */
export function turnFailureAction(f: TurnFailure): TurnFailureAction {
  return f.canRetry && f.stage === 'history' && f.code === 'RUNTIME_MEMORY_FAILED'
    ? 'hand_back'
    : 'apologize';
}
