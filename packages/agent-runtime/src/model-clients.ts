/**
 * Model clients per snapshot and provider. A turn leases the clients of the snapshot it captured;
 * clients of a snapshot that is no longer current are retired once no turn holds that snapshot, so
 * a turn that started before a reload makes every call (first and later) with its old key and URL.
 */
import type { ConfigSnapshot } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import {
  createModelClient,
  ModelError,
  type ModelClient,
  type ModelClientOptions,
  type ModelProviderConfig,
} from '@agent/model-providers';

export type ModelClientFactory = (config: ModelProviderConfig, options: ModelClientOptions) => ModelClient;

export interface ClientLease {
  readonly version: number;
  /** The client of `provider` built from the leased snapshot (the same object for every call of the turn). */
  client(provider: string): ModelClient;
  /** Idempotent. */
  release(): void;
}

interface Generation {
  snapshot: ConfigSnapshot;
  refs: number;
  clients: Map<string, ModelClient>;
}

export class ModelClientPool {
  private readonly generations = new Map<number, Generation>();
  private readonly retiring = new Set<Promise<void>>();

  constructor(
    private readonly currentVersion: () => number,
    private readonly logger: Logger,
    private readonly options: Omit<ModelClientOptions, 'logger'> = {},
    private readonly factory: ModelClientFactory = createModelClient,
  ) {}

  /** Holds the clients of `snapshot` until `release()`. */
  acquire(snapshot: ConfigSnapshot): ClientLease {
    const gen = this.generation(snapshot);
    gen.refs += 1;
    let released = false;
    return {
      version: snapshot.version,
      client: (provider) => this.clientOf(gen, provider),
      release: () => {
        if (released) return;
        released = true;
        gen.refs -= 1;
        this.sweep();
      },
    };
  }

  /** Builds the clients of a new snapshot beside the old ones (no connection is opened yet). */
  prepare(snapshot: ConfigSnapshot): void {
    const gen = this.generation(snapshot);
    const names = new Set([...snapshot.agents.values()].map((a) => a.definition.model.provider));
    for (const name of names) {
      try {
        this.clientOf(gen, name);
      } catch (err) {
        // A provider that cannot be built fails the turns that use it, with this code in the log.
        this.logger.error('model client build failed', {
          provider: name,
          snapshot_version: snapshot.version,
          code: (err as { code?: string }).code ?? 'INTERNAL',
        });
      }
    }
    this.sweep();
  }

  /** Retires the clients of every snapshot that is not current and not held by a turn. */
  sweep(): void {
    const current = this.currentVersion();
    for (const [version, gen] of this.generations) {
      if (version === current || gen.refs > 0) continue;
      this.generations.delete(version);
      for (const client of gen.clients.values()) this.retire(client);
    }
  }

  /** Retires every client; resolves when all pools are closed. */
  async close(): Promise<void> {
    for (const gen of this.generations.values()) for (const c of gen.clients.values()) this.retire(c);
    this.generations.clear();
    await Promise.all(this.retiring);
  }

  /** Versions that still have clients (for tests and diagnostics). */
  versions(): number[] {
    return [...this.generations.keys()].sort((a, b) => a - b);
  }

  private retire(client: ModelClient): void {
    const p = client.retire().catch(() => {});
    this.retiring.add(p);
    void p.finally(() => this.retiring.delete(p));
  }

  private generation(snapshot: ConfigSnapshot): Generation {
    let gen = this.generations.get(snapshot.version);
    if (!gen) {
      gen = { snapshot, refs: 0, clients: new Map() };
      this.generations.set(snapshot.version, gen);
    }
    return gen;
  }

  private clientOf(gen: Generation, provider: string): ModelClient {
    let client = gen.clients.get(provider);
    if (client) return client;
    const config = gen.snapshot.provider(provider);
    if (!config) {
      throw new ModelError(
        'MODEL_CONFIG_INVALID',
        `provider "${provider}" is not defined in llm.yaml (snapshot v${gen.snapshot.version}); define it and reload`,
        { provider },
      );
    }
    client = this.factory({ name: provider, ...config }, { ...this.options, logger: this.logger });
    gen.clients.set(provider, client);
    return client;
  }
}
