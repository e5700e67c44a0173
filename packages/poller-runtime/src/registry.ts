/** The kind registry: built-in and third-party kinds, checked by brand and API version. */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  PollerError,
  isPollerKind,
  KIND_NAME_PATTERN,
  POLLER_API_VERSION,
  POLLER_KIND_BRAND,
  type PollerKind,
} from '@agent/poller-core';

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
  /** Packages that failed to load (their last attempt); jobs of unknown kinds name them. */
  failedPackages(): readonly KindPackageFailure[];
  /** Records the failure of one package (replacing an earlier one); `forget` drops it before a retry. */
  recordPackageFailure(failure: KindPackageFailure): void;
  forgetPackageFailure(name: string): void;
  /** Names of the packages whose kinds are registered. */
  packages(): string[];
}

export function createKindRegistry(initial: readonly unknown[] = []): KindRegistry {
  const kinds = new Map<string, { kind: PollerKind; origin: string }>();
  const failures = new Map<string, KindPackageFailure>();
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
    failedPackages: () => [...failures.values()],
    recordPackageFailure: (f) => void failures.set(f.package, f),
    forgetPackageFailure: (name) => void failures.delete(name),
    packages: () => [...new Set([...kinds.values()].map((e) => e.origin))].filter((o) => o !== 'built-in'),
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
 * Packages already registered are skipped, so a reload loads only newly listed ones; a package that failed
 * before is tried again (it may have been installed since). Never throws: a package that fails is recorded
 * in the registry and returned in `failed`; only the jobs of its kinds are rejected later.
 */
export async function loadKindPackages(
  registry: KindRegistry,
  names: readonly string[],
  options: { fromDir: string },
): Promise<LoadKindPackagesResult> {
  const result: LoadKindPackagesResult = { loaded: [], failed: [] };
  // Any file name in fromDir: require.resolve walks up node_modules from its directory.
  const req = createRequire(join(options.fromDir, 'package.json'));
  const have = new Set(registry.packages());
  for (const name of names) {
    if (have.has(name)) continue;
    registry.forgetPackageFailure(name);
    const fail = (code: KindPackageFailure['code'], message: string) => {
      const f = { package: name, code, message };
      registry.recordPackageFailure(f);
      result.failed.push(f);
    };
    let resolved: string;
    try {
      resolved = req.resolve(name);
    } catch {
      fail(
        'POLLER_KIND_PACKAGE',
        `kind package "${name}" is not installed where the daemon looks for it (node_modules of ${options.fromDir} or a parent directory); install it there: cd ${options.fromDir} && npm install ${name}`,
      );
      continue;
    }
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(resolved).href)) as Record<string, unknown>;
    } catch (err) {
      fail('POLLER_KIND_PACKAGE', `kind package "${name}" failed to load: ${firstLine(err)}`);
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

/** Node's module errors carry a require stack on later lines: one line is what an operator needs. */
function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
}
