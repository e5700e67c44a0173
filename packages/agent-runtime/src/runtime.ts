/**
 * The agent runtime: channel instances, inbound routing, sessions with bounded queues, turns on
 * snapshots, tools, transcripts and memory.
 */
import { mkdirSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import {
  createFileKeyValueStore,
  type ChannelInstance,
  type ChannelPlugin,
  type InboundMessage,
  type SendResult,
} from '@agent/channels';
import type { Binding, ConfigSnapshot, SnapshotStore } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import type { ModelClientOptions } from '@agent/model-providers';
import { setTimer, type TimerHandle } from '@agent/timers';
import { AgentRuntimeError, errorCode, errorMessage } from './errors.js';
import type { ChannelHosting, InboundOutcome, InboundOwnership, InboundSettle } from './hosting.js';
import { openConversationMemory, type ConversationMemory } from './memory.js';
import { ModelClientPool, type ModelClientFactory } from './model-clients.js';
import { loadSkills } from './prompt.js';
import { bindingStillTakes, matchBinding, resolveOutbound } from './routing.js';
import { createSendMessageTool, type SnapshotDeliver } from './send-message.js';
import { collectTools, type ToolDefinition, type ToolProvider } from './tools.js';
import { sessionKeyString, TranscriptWriter, type SessionKey, type TranscriptRecord } from './transcripts.js';
import { runTurn, type TurnAbortReason, type TurnResult } from './turn.js';

export interface AgentRuntimeOptions {
  store: SnapshotStore;
  /** Channel plugins the daemon has (built-in and registered). */
  channels: readonly ChannelPlugin[];
  logger: Logger;
  /** Holds `channels/<plugin>.json` (channel state such as `chat_b` offsets). */
  dataDir: string;
  /** Wall clock for transcripts and memory rows. */
  clock?: () => Date;
  /**
   * Conversation memory. Omitted: opened at `memory.path` (relative to the working directory) when
   * `memory.enabled`, and closed by `stop()`. `null`: no memory. A given store is not closed by `stop()`.
   */
  memory?: ConversationMemory | null;
  /** Options passed to every model client (tests use them for short backoffs). */
  modelClientOptions?: Omit<ModelClientOptions, 'logger'>;
  /** Replaces `createModelClient` (tests, or a custom transport). */
  modelClientFactory?: ModelClientFactory;
  /** Channel state, inbound ownership and ingress when several daemons share the channels (cluster mode). */
  hosting?: ChannelHosting;
  /** Names transcript files per daemon (cluster mode: a session's turns run on several daemons). */
  daemonId?: string;
}

export interface DeliverRequest {
  agentId: string;
  /** Channel plugin name. */
  channel: string;
  to: string;
  text: string;
}

export interface ChannelInstanceReport {
  plugin: string;
  instance: string;
}

export interface StartReport {
  started: ChannelInstanceReport[];
  failed: (ChannelInstanceReport & { code: string; message: string })[];
}

export interface StopReport {
  /** Turns that finished within the grace period. */
  finished: number;
  /** Turns cancelled through their AbortSignal at the deadline. */
  aborted: number;
  /** Queued messages dropped without a turn. */
  dropped: number;
}

export type AgentRuntimeState = 'new' | 'running' | 'stopping' | 'stopped';

export interface AgentRuntime {
  readonly state: AgentRuntimeState;
  /** Creates and starts every configured channel instance of the known plugins. Call once. */
  start(): Promise<StartReport>;
  /**
   * Stops taking messages, drops queued ones (logged), lets running turns finish until `graceMs`
   * (default `runtime.shutdown_grace_ms`), then aborts them; stops channels; retires model clients.
   */
  stop(options?: { graceMs?: number }): Promise<StopReport>;
  /**
   * Takes one message for a turn. Resolves once it is queued or dropped; rejects when not running.
   * `settle`, when given, is called once when the message is done with (see `InboundOutcome`); with
   * `settle.canRetry`, a turn that cannot read its memory hands the message back (`'retry'`) instead of
   * answering with the apology.
   */
  handleInbound(msg: InboundMessage, settle?: InboundSettle): Promise<void>;
  /** Sends through the agent's binding of `channel` in the current snapshot (no allowlist check). */
  deliver(req: DeliverRequest): Promise<SendResult>;
  /** Adds tools for every turn; returns a function that removes them again. */
  registerTools(provider: ToolProvider): () => void;
  /**
   * Calls `updateCredentials` on running instances whose resolved block changed in `snapshot`
   * (default: the current one). Returns `<plugin>/<instance>` of each updated instance. Also runs on
   * every snapshot swap.
   */
  reloadCredentials(snapshot?: ConfigSnapshot): string[];
  /** Resolves when no turn is running or queued. */
  whenIdle(): Promise<void>;
  /** Snapshot versions that still have model clients (the current one, plus those turns still hold). */
  modelClientVersions(): number[];
}

interface RunningInstance {
  plugin: string;
  name: string;
  instance: ChannelInstance;
  config: unknown;
  /** Whoever runs the inbound side instead of the runtime (a single-consumer instance in a cluster). */
  owned: boolean;
  ownership?: InboundOwnership;
}

interface Queued {
  msg: InboundMessage;
  settle: InboundSettle | undefined;
}

interface Session {
  key: SessionKey;
  keyString: string;
  queue: Queued[];
  running: boolean;
}

interface InFlight {
  controller: AbortController;
  reason: TurnAbortReason | undefined;
  done: Promise<void>;
}

/** Remembered `(plugin, instance, chatId, messageId)` keys, to drop re-deliveries. */
const DEDUPE_WINDOW = 4096;
/** How long `stop()` waits for aborted turns to end before it moves on. */
const ABORT_SETTLE_MS = 5_000;

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${stableJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** The key of `(plugin, instance, chatId, messageId)` in the dedupe window. */
function dedupeKey(msg: InboundMessage): string {
  return [msg.plugin, msg.instance, msg.chatId, msg.messageId].join('\u0000');
}

function instanceKey(plugin: string, name: string): string {
  return `${plugin}\u0000${name}`;
}

function delay(ms: number): { promise: Promise<void>; cancel(): void } {
  let timer: TimerHandle | undefined;
  const promise = new Promise<void>((r) => {
    timer = setTimer(r, ms);
  });
  return { promise, cancel: () => timer?.cancel() };
}

export function createAgentRuntime(options: AgentRuntimeOptions): AgentRuntime {
  const { store, logger } = options;
  const hosting = options.hosting ?? {};
  const now = options.clock ?? (() => new Date());
  const pool = new ModelClientPool(
    () => store.current().version,
    logger,
    options.modelClientOptions,
    options.modelClientFactory,
  );
  const transcripts = new TranscriptWriter(options.daemonId);
  const instances = new Map<string, RunningInstance>();
  const sessions = new Map<string, Session>();
  const inFlight = new Set<InFlight>();
  const providers: ToolProvider[] = [];
  const skillsCache = new Map<string, string>();
  const seen = new Set<string>();
  let idleWaiters: (() => void)[] = [];
  let state: AgentRuntimeState = 'new';
  let memory: ConversationMemory | null = options.memory ?? null;
  const ownsMemory = options.memory === undefined;
  let unsubscribe: (() => void) | undefined;

  function instanceFor(plugin: string, name: string): ChannelInstance {
    if (state === 'new' || state === 'stopped') {
      throw new AgentRuntimeError('RUNTIME_NOT_RUNNING', 'the agent runtime is not running; start it first');
    }
    const entry = instances.get(instanceKey(plugin, name));
    if (!entry) {
      throw new AgentRuntimeError(
        'RUNTIME_NO_INSTANCE',
        `channel instance ${plugin}/${name} is not running; define it under instances in plugins/${plugin}.yaml (and restart) or check the binding`,
      );
    }
    return entry.instance;
  }

  const deliverOn: SnapshotDeliver = async ({ snapshot, agentId, bindingIndex, channel, to, text }) => {
    const target = resolveOutbound(snapshot, agentId, channel, bindingIndex);
    return instanceFor(target.plugin, target.instance).send({ to, text });
  };

  /** Built-in tools of one turn: `send_message` on the conversation's own channel uses its instance. */
  function builtinToolsFor(msg: InboundMessage): ToolDefinition[] {
    const deliverInTurn: SnapshotDeliver = async (req) => {
      const binding = req.snapshot.agents.get(req.agentId)?.definition.inbound_bindings[req.bindingIndex];
      if (binding?.plugin === req.channel && msg.plugin === req.channel) {
        return instanceFor(msg.plugin, msg.instance).send({ to: req.to, text: req.text });
      }
      return deliverOn(req);
    };
    return [createSendMessageTool(deliverInTurn, logger)];
  }

  function skillsOf(agentId: string, dir: string): string {
    let s = skillsCache.get(agentId);
    if (s === undefined) {
      s = loadSkills(dir, logger, agentId);
      skillsCache.set(agentId, s);
    }
    return s;
  }

  function accepting(): boolean {
    return state === 'running';
  }

  function isIdle(): boolean {
    return inFlight.size === 0 && [...sessions.values()].every((s) => !s.running && s.queue.length === 0);
  }

  function notifyIdle(): void {
    if (!isIdle()) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  }

  function writeTranscript(
    snapshot: ConfigSnapshot,
    key: SessionKey,
    records: TranscriptRecord[],
  ): Promise<void> {
    const dir = snapshot.agents.get(key.agentId)?.transcriptsDir;
    if (!dir) return Promise.resolve();
    return transcripts.append(dir, key, records, (err) =>
      logger.error('transcript write failed', { agent_id: key.agentId, code: errorCode(err) }),
    );
  }

  /**
   * Runs one turn; answers `abandoned` when the shutdown aborted it (its message may come again), `retry`
   * when the turn handed it back (only with `canRetry`).
   */
  async function runQueued(
    session: Session,
    msg: InboundMessage,
    canRetry: boolean,
  ): Promise<InboundOutcome> {
    // The turn's snapshot: captured once, used for everything inside the turn.
    const snapshot = store.current();
    const { key } = session;
    const binding: Readonly<Binding> | undefined = bindingStillTakes(
      snapshot,
      key.agentId,
      key.bindingIndex,
      msg.plugin,
      msg.instance,
    );
    if (!binding) {
      logger.warn('turn dropped', {
        agent_id: key.agentId,
        binding_index: key.bindingIndex,
        message_id: msg.messageId,
        reason: 'binding changed by a reload',
        snapshot_version: snapshot.version,
      });
      return 'done';
    }
    const lease = pool.acquire(snapshot);
    const controller = new AbortController();
    const flight: InFlight = { controller, reason: undefined, done: Promise.resolve() };
    const timeoutMs = snapshot.runtime.sessions.turn_timeout_ms;
    const timer = setTimer(
      () => {
        flight.reason ??= 'timeout';
        controller.abort(
          new AgentRuntimeError(
            'RUNTIME_TURN_TIMEOUT',
            `turn timed out after ${timeoutMs} ms; raise runtime.sessions.turn_timeout_ms if turns need longer`,
          ),
        );
      },
      timeoutMs,
      { unref: true },
    );
    let result: TurnResult | undefined;
    const work = runTurn(
      {
        logger,
        now,
        memory,
        skills: skillsOf,
        tools: (agentId, b) =>
          collectTools(agentId, builtinToolsFor(msg), providers, b.allowed_tools, logger),
        transcript: (records) => writeTranscript(snapshot, key, records),
        reply: (m, text) => instanceFor(m.plugin, m.instance).send({ to: m.chatId, text }),
      },
      {
        snapshot,
        lease,
        key,
        binding,
        msg,
        signal: controller.signal,
        abortReason: () => flight.reason,
        canRetry,
      },
    )
      .then((r) => {
        result = r;
      })
      .catch((err: unknown) => {
        // runTurn handles its own errors; this is a bug guard so a session never wedges.
        logger.error('turn crashed', {
          agent_id: key.agentId,
          code: errorCode(err),
          error: errorMessage(err),
        });
      });
    flight.done = work;
    inFlight.add(flight);
    try {
      await work;
    } finally {
      timer.cancel();
      inFlight.delete(flight);
      lease.release();
    }
    logger.debug('turn finished', {
      agent_id: key.agentId,
      binding_index: key.bindingIndex,
      status: result?.status ?? 'crashed',
      model_calls: result?.modelCalls ?? 0,
      snapshot_version: snapshot.version,
    });
    if (flight.reason === 'shutdown') return 'abandoned';
    return result?.status === 'handed_back' ? 'retry' : 'done';
  }

  /** Tells a message's caller how it ended; a caller's failure never reaches the session. */
  function settleQueued(q: Queued, outcome: InboundOutcome): void {
    if (!q.settle) return;
    try {
      q.settle(outcome);
    } catch (err) {
      logger.error('inbound settle failed', { message_id: q.msg.messageId, code: errorCode(err) });
    }
  }

  async function pump(session: Session): Promise<void> {
    session.running = true;
    try {
      while (accepting()) {
        const next = session.queue.shift();
        if (!next) break;
        let outcome: InboundOutcome = 'done';
        try {
          outcome = await runQueued(session, next.msg, next.settle?.canRetry === true);
        } catch (err) {
          // A bug guard: one broken turn must neither wedge the session nor take the daemon down.
          logger.error('turn crashed', {
            agent_id: session.key.agentId,
            code: errorCode(err),
            error: errorMessage(err),
          });
        }
        // A message handed back comes again (maybe here): it must not be taken for a re-delivery then.
        if (outcome === 'retry') forget(next.msg);
        settleQueued(next, outcome);
      }
    } finally {
      session.running = false;
      if (session.queue.length === 0) sessions.delete(session.keyString);
      notifyIdle();
    }
  }

  function remember(msg: InboundMessage): boolean {
    const k = dedupeKey(msg);
    if (seen.has(k)) return false;
    seen.add(k);
    if (seen.size > DEDUPE_WINDOW) {
      const oldest = seen.values().next().value;
      if (oldest !== undefined) seen.delete(oldest);
    }
    return true;
  }

  function forget(msg: InboundMessage): void {
    seen.delete(dedupeKey(msg));
  }

  function reloadCredentials(snapshot: ConfigSnapshot = store.current()): string[] {
    const updated: string[] = [];
    for (const entry of instances.values()) {
      const next = snapshot.plugins.get(entry.plugin)?.instances[entry.name];
      if (next === undefined || stableJson(next) === stableJson(entry.config)) continue;
      if (!entry.instance.updateCredentials) continue;
      try {
        entry.instance.updateCredentials(next);
        entry.config = next;
        updated.push(`${entry.plugin}/${entry.name}`);
        logger.info('channel credentials updated', { plugin: entry.plugin, instance: entry.name });
      } catch (err) {
        logger.error('channel credentials update failed', {
          plugin: entry.plugin,
          instance: entry.name,
          code: errorCode(err),
        });
      }
    }
    return updated;
  }

  // Agents whose directories exist: an agent that joins at a reload (its file was invalid at start) gets its own.
  const prepared = new Set<string>();
  function prepareAgentDirs(snapshot: ConfigSnapshot): void {
    for (const agent of snapshot.agents.values()) {
      if (prepared.has(agent.id)) continue;
      prepared.add(agent.id);
      for (const dir of [agent.workspace, agent.skillsDir, agent.transcriptsDir]) {
        try {
          mkdirSync(dir, { recursive: true });
        } catch (err) {
          logger.error('agent directory not created', { agent_id: agent.id, dir, code: errorCode(err) });
        }
      }
    }
  }

  const api: AgentRuntime = {
    get state() {
      return state;
    },

    async start() {
      if (state !== 'new') {
        throw new AgentRuntimeError('RUNTIME_NOT_RUNNING', `start() was already called (state ${state})`);
      }
      const snapshot = store.current();
      if (ownsMemory && snapshot.memory.enabled) {
        const path = isAbsolute(snapshot.memory.path) ? snapshot.memory.path : resolve(snapshot.memory.path);
        memory = openConversationMemory(path);
      }
      prepareAgentDirs(snapshot);
      pool.prepare(snapshot);
      unsubscribe = store.subscribe((next) => {
        prepareAgentDirs(next);
        pool.prepare(next);
        reloadCredentials(next);
      });

      const report: StartReport = { started: [], failed: [] };
      for (const plugin of options.channels) {
        const configured = snapshot.plugins.get(plugin.name)?.instances ?? {};
        if (Object.keys(configured).length === 0) continue;
        // Opened on first use only: unused when the host keeps channel state elsewhere.
        const fileStore = createFileKeyValueStore(join(options.dataDir, 'channels', `${plugin.name}.json`));
        const owned = plugin.singleConsumer === true && hosting.own !== undefined;
        for (const [name, config] of Object.entries(configured)) {
          try {
            const instance = plugin.create(name, config, {
              logger: logger.child({ plugin: plugin.name, instance: name }),
              state: hosting.state?.(plugin.name, name) ?? fileStore,
              onInbound: hosting.ingress ?? ((msg) => api.handleInbound(msg)),
            });
            instances.set(instanceKey(plugin.name, name), {
              plugin: plugin.name,
              name,
              instance,
              config,
              owned,
            });
          } catch (err) {
            logger.error('channel instance not created', {
              plugin: plugin.name,
              instance: name,
              code: errorCode(err),
              error: errorMessage(err),
            });
            report.failed.push({
              plugin: plugin.name,
              instance: name,
              code: errorCode(err),
              message: errorMessage(err),
            });
          }
        }
      }
      state = 'running';
      for (const entry of instances.values()) {
        try {
          if (entry.owned && hosting.own) {
            // Its owner starts the inbound side, here or on another daemon; sending works everywhere.
            const { instance } = entry;
            entry.ownership = hosting.own({
              plugin: entry.plugin,
              instance: entry.name,
              start: () => instance.start(),
              stop: () => instance.stop(),
            });
          } else await entry.instance.start();
          report.started.push({ plugin: entry.plugin, instance: entry.name });
        } catch (err) {
          // Inbound is down for this instance; sending through it may still work.
          logger.error('channel instance start failed', {
            plugin: entry.plugin,
            instance: entry.name,
            code: errorCode(err),
            error: errorMessage(err),
          });
          report.failed.push({
            plugin: entry.plugin,
            instance: entry.name,
            code: errorCode(err),
            message: errorMessage(err),
          });
        }
      }
      logger.info('agent runtime started', {
        instances: report.started.map((i) => `${i.plugin}/${i.instance}`),
        snapshot_version: snapshot.version,
      });
      return report;
    },

    async stop(opts = {}) {
      const report: StopReport = { finished: 0, aborted: 0, dropped: 0 };
      if (state === 'stopped' || state === 'stopping') return report;
      const wasRunning = state === 'running';
      state = 'stopping';
      const graceMs = opts.graceMs ?? store.current().runtime.shutdown_grace_ms;
      for (const session of sessions.values()) {
        for (const queued of session.queue.splice(0)) {
          const { msg } = queued;
          settleQueued(queued, 'abandoned');
          report.dropped += 1;
          logger.warn('turn dropped', {
            agent_id: session.key.agentId,
            binding_index: session.key.bindingIndex,
            message_id: msg.messageId,
            reason: 'shutdown',
          });
          const snapshot = store.current();
          void writeTranscript(snapshot, session.key, [
            {
              ts: now().toISOString(),
              type: 'turn_dropped',
              snapshot_version: snapshot.version,
              message_id: msg.messageId,
              text: msg.text,
              reason: 'shutdown',
            },
          ]);
        }
      }
      const running = [...inFlight];
      if (running.length > 0) {
        const all = Promise.all(running.map((f) => f.done));
        const grace = delay(graceMs);
        await Promise.race([all, grace.promise]);
        grace.cancel();
        for (const f of running) {
          if (!inFlight.has(f)) {
            report.finished += 1;
            continue;
          }
          report.aborted += 1;
          f.reason = 'shutdown';
          f.controller.abort(new AgentRuntimeError('RUNTIME_NOT_RUNNING', 'the agent runtime is stopping'));
        }
        if (report.aborted > 0) {
          const settle = delay(ABORT_SETTLE_MS);
          await Promise.race([all, settle.promise]);
          settle.cancel();
          if (inFlight.size > 0) logger.error('turns still running after abort', { count: inFlight.size });
        }
      }
      await transcripts.flush();
      if (wasRunning) {
        const results = await Promise.allSettled(
          [...instances.values()].map((e) => (e.ownership ? e.ownership.release() : e.instance.stop())),
        );
        results.forEach((r, i) => {
          if (r.status === 'rejected')
            logger.warn('channel instance stop failed', { code: errorCode(r.reason), index: i });
        });
      }
      unsubscribe?.();
      await pool.close();
      if (ownsMemory)
        await memory
          ?.close()
          .catch((err: unknown) => logger.warn('memory close failed', { code: errorCode(err) }));
      state = 'stopped';
      logger.info('agent runtime stopped', { ...report });
      notifyIdle();
      return report;
    },

    async handleInbound(msg, settle) {
      if (state !== 'running') {
        throw new AgentRuntimeError(
          'RUNTIME_NOT_RUNNING',
          'the agent runtime is not taking messages (not started or stopping)',
        );
      }
      const snapshot = store.current();
      const match = matchBinding(snapshot, msg.plugin, msg.instance);
      if (!match) {
        logger.warn('inbound unmatched', {
          plugin: msg.plugin,
          instance: msg.instance,
          message_id: msg.messageId,
          snapshot_version: snapshot.version,
        });
        settle?.('done');
        return;
      }
      if (typeof msg.text !== 'string' || msg.text.trim() === '') {
        logger.debug('inbound empty', {
          plugin: msg.plugin,
          instance: msg.instance,
          message_id: msg.messageId,
        });
        settle?.('done');
        return;
      }
      if (!remember(msg)) {
        logger.debug('inbound duplicate', {
          plugin: msg.plugin,
          instance: msg.instance,
          message_id: msg.messageId,
        });
        settle?.('done');
        return;
      }
      // Exactly these fields (spec log table).
      logger.info('inbound matched binding', {
        agent_id: match.agentId,
        plugin: msg.plugin,
        binding_index: match.bindingIndex,
        snapshot_version: snapshot.version,
      });
      const key: SessionKey = {
        agentId: match.agentId,
        bindingIndex: match.bindingIndex,
        plugin: msg.plugin,
        instance: msg.instance,
        chatId: msg.chatId,
      };
      const keyString = sessionKeyString(key);
      let session = sessions.get(keyString);
      if (!session) {
        session = { key, keyString, queue: [], running: false };
        sessions.set(keyString, session);
      }
      const maxQueue = snapshot.runtime.sessions.max_queue;
      while (session.queue.length >= maxQueue) {
        const oldest = session.queue.shift();
        if (!oldest) break;
        const dropped = oldest.msg;
        settleQueued(oldest, 'done');
        logger.warn('session queue full, oldest message dropped', {
          agent_id: key.agentId,
          binding_index: key.bindingIndex,
          message_id: dropped.messageId,
          max_queue: maxQueue,
        });
        void writeTranscript(snapshot, key, [
          {
            ts: now().toISOString(),
            type: 'turn_dropped',
            snapshot_version: snapshot.version,
            message_id: dropped.messageId,
            text: dropped.text,
            reason: 'queue full',
          },
        ]);
      }
      session.queue.push({ msg, settle });
      if (!session.running) void pump(session);
    },

    async deliver(req) {
      return deliverOn({
        snapshot: store.current(),
        agentId: req.agentId,
        bindingIndex: -1,
        channel: req.channel,
        to: req.to,
        text: req.text,
      });
    },

    registerTools(provider) {
      providers.push(provider);
      return () => {
        const i = providers.indexOf(provider);
        if (i >= 0) providers.splice(i, 1);
      };
    },

    reloadCredentials,

    whenIdle() {
      if (isIdle()) return Promise.resolve();
      return new Promise<void>((r) => idleWaiters.push(r));
    },

    modelClientVersions: () => pool.versions(),
  };
  return api;
}
