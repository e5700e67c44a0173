/** The kind registry: built-in and third-party kinds, checked by brand and API version. */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PollerError } from './errors.js';
import {
  isPollerKind,
  KIND_NAME_PATTERN,
  POLLER_API_VERSION,
  POLLER_KIND_BRAND,
  type PollerKind,
} from './kind.js';

export interface KindPackageFailure {
  package: string;
  code:
    | 'POLLER_KIND_PACKAGE'
    | 'POLLER_NOT_A_KIND'
    | 'POLLER_DUPLICATE_KIND'
    | 'POLLER_KIND_API_VERSION'
    | 'POLLER_INVALID_KIND';
  message: string;
}

export interface KindRegistry {
  /** Throws `PollerError` (`POLLER_NOT_A_KIND`, `POLLER_KIND_API_VERSION`, `POLLER_DUPLICATE_KIND`). */
  register(kind: unknown, origin?: string): void;
  get(name: string): PollerKind | undefined;
  has(name: string): boolean;
  list(): PollerKind[];
  /** Where a kind came from (`built-in` or a package name). */
  originOf(name: string): string | undefined;
  /** Packages that failed to load; jobs of unknown kinds name them. */
  failedPackages(): readonly KindPackageFailure[];
  recordPackageFailure(failure: KindPackageFailure): void;
}

export function createKindRegistry(initial: readonly unknown[] = []): KindRegistry {
  const kinds = new Map<string, { kind: PollerKind; origin: string }>();
  const failures: KindPackageFailure[] = [];
  const registry: KindRegistry = {
    register(value, origin = 'built-in') {
      if (!isPollerKind(value)) {
        throw new PollerError(
          'POLLER_NOT_A_KIND',
          `${origin}: the value is not a poller kind; build it with definePollerKind() from @agent/poller-core`,
        );
      }
      const k = value as PollerKind;
      const brand = (k as unknown as Record<symbol, unknown>)[POLLER_KIND_BRAND];
      if (brand !== POLLER_API_VERSION || k.apiVersion !== POLLER_API_VERSION) {
        throw new PollerError(
          'POLLER_KIND_API_VERSION',
          `${origin}: kind "${String(k.kind)}" targets plugin apiVersion ${String(k.apiVersion)}; this daemon supports ${POLLER_API_VERSION}. Upgrade the package or the daemon.`,
        );
      }
      if (typeof k.kind !== 'string' || !KIND_NAME_PATTERN.test(k.kind))
        throw new PollerError('POLLER_INVALID_KIND', `${origin}: kind name "${String(k.kind)}" is invalid`);
      const existing = kinds.get(k.kind);
      if (existing) {
        if (existing.kind === k) return;
        throw new PollerError(
          'POLLER_DUPLICATE_KIND',
          `${origin}: kind "${k.kind}" is already registered by ${existing.origin}; each kind name may be registered once`,
        );
      }
      kinds.set(k.kind, { kind: k, origin });
    },
    get: (name) => kinds.get(name)?.kind,
    has: (name) => kinds.has(name),
    list: () => [...kinds.values()].map((e) => e.kind).sort((a, b) => (a.kind < b.kind ? -1 : 1)),
    originOf: (name) => kinds.get(name)?.origin,
    failedPackages: () => failures,
    recordPackageFailure: (f) => void failures.push(f),
  };
  for (const k of initial) registry.register(k);
  return registry;
}

export interface LoadKindPackagesResult {
  loaded: { package: string; kinds: string[] }[];
  failed: KindPackageFailure[];
}

/** The kinds a module exports: its default export and every named `*PollerKind` export. */
export function kindsOfModule(mod: Record<string, unknown>): unknown[] {
  const out: unknown[] = [];
  const add = (v: unknown) => {
    if (v !== undefined && !out.includes(v)) out.push(v);
  };
  if (isPollerKind(mod.default)) add(mod.default);
  for (const [name, v] of Object.entries(mod)) if (name !== 'default' && name.endsWith('PollerKind')) add(v);
  return out;
}

/**
 * Resolves each package from `fromDir` (the config directory), imports it and registers its kinds.
 * Never throws: a package that fails is recorded in the registry and returned in `failed`; only the
 * jobs of its kinds are rejected later.
 */
export async function loadKindPackages(
  registry: KindRegistry,
  names: readonly string[],
  options: { fromDir: string },
): Promise<LoadKindPackagesResult> {
  const result: LoadKindPackagesResult = { loaded: [], failed: [] };
  const req = createRequire(join(options.fromDir, 'noop.js'));
  for (const name of names) {
    const fail = (code: KindPackageFailure['code'], message: string) => {
      const f = { package: name, code, message };
      registry.recordPackageFailure(f);
      result.failed.push(f);
    };
    let mod: Record<string, unknown>;
    try {
      const resolved = req.resolve(name);
      mod = (await import(pathToFileURL(resolved).href)) as Record<string, unknown>;
    } catch (err) {
      fail(
        'POLLER_KIND_PACKAGE',
        `kind package "${name}" could not be loaded from ${options.fromDir}: ${(err as Error).message}`,
      );
      continue;
    }
    const kinds = kindsOfModule(mod);
    if (kinds.length === 0) {
      fail(
        'POLLER_KIND_PACKAGE',
        `kind package "${name}" exports no poller kind (export one as default or as a named *PollerKind)`,
      );
      continue;
    }
    const ok: string[] = [];
    for (const k of kinds) {
      try {
        registry.register(k, name);
        ok.push((k as PollerKind).kind);
      } catch (err) {
        fail((err as PollerError).code as KindPackageFailure['code'], (err as Error).message);
      }
    }
    if (ok.length) result.loaded.push({ package: name, kinds: ok });
  }
  return result;
}
