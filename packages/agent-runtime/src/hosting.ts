/**
 * Where a channel instance's inbound side runs and where its messages go. On one host the runtime does it
 * all itself; a cluster gives each single-consumer instance one owner, keeps channel state where every
 * daemon reads it, and routes accepted messages through a shared queue that hands each chat to one daemon.
 */
import type { InboundMessage, KeyValueStore } from '@agent/channels';

/** How a message given to `handleInbound` ended, for a caller that confirms it upstream. */
export type InboundOutcome =
  /** A turn ran (whatever it answered), or the message was skipped on purpose (unmatched, empty, a
   * duplicate, dropped from a full queue, its binding gone): confirm it. */
  | 'done'
  /** The runtime stopped before it was handled (dropped from the queue at shutdown, or its turn aborted by
   * the shutdown): do not confirm it, so that it comes again. */
  | 'abandoned'
  /** Not handled because of a failure of this daemon before anything was sent (its conversation memory
   * could not be read): do not confirm it; run it again soon, here or elsewhere. Only reported to a
   * `settle` whose `canRetry` is true. */
  | 'retry';

/**
 * How the caller of `handleInbound` hears how a message ended. `canRetry` says that the caller can run the
 * message again (a queue that redelivers it): only then may a turn that failed before it sent anything hand
 * it back with `'retry'` instead of answering with the apology. A caller sets it false on the last attempt
 * it allows, so that a message never goes round forever. Absent (a plain function): `'retry'` never comes.
 */
export interface InboundSettle {
  (outcome: InboundOutcome): void;
  readonly canRetry?: boolean;
}

/** The inbound side of one instance, started and stopped by whoever owns it. */
export interface InboundSide {
  readonly plugin: string;
  readonly instance: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A running ownership of one inbound side; `release` stops the side (when running) and lets it go. */
export interface InboundOwnership {
  release(): Promise<void>;
}

export interface ChannelHosting {
  /**
   * The channel state an instance of `plugin` gets (e.g. `chat_b` offsets); one store per plugin as far as
   * the instance can tell (keys are namespaced by instance), asked per instance so that its writes can carry
   * that instance owner's fence. Default: `<dataDir>/channels/<plugin>.json`.
   */
  state?(plugin: string, instance: string): KeyValueStore;
  /**
   * Takes over the inbound side of an instance whose plugin is `singleConsumer`: the runtime does not start
   * it, the owner does, while it holds the instance. Default: the runtime starts it.
   */
  own?(side: InboundSide): InboundOwnership;
  /**
   * Where channels hand accepted messages. Resolves once the message is safely accepted (the channel then
   * confirms it to the vendor). Default: the runtime's own `handleInbound`.
   */
  ingress?(msg: InboundMessage): Promise<void>;
}
