/**
 * The poller kinds of a running subsystem: the built-in ones, loaded once a config needs them, and kind
 * packages.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ConfigSnapshot } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import { createKindRegistry, loadKindPackages, type KindRegistry } from '@agent/poller-runtime';
import { pollersOf } from '@agent/poller-runtime/config';
import { accountSchemas } from './plugin-accounts.js';

/**
 * Whether a config needs the built-in kinds: it has a job (of any kind: an unknown kind's error lists them),
 * provider accounts (their kinds offer agents tools), or kind packages (a package may not take a built-in
 * kind's name). A config with none of these never loads them, and its agents see no kind's tool until a
 * reload brings one.
 */
export function needsBuiltinKinds(snapshot: ConfigSnapshot): boolean {
  const pollers = pollersOf(snapshot);
  if (pollers && pollers.jobs.length + pollers.rejected.length + pollers.settings.kind_packages.length > 0)
    return true;
  return Object.keys(accountSchemas).some(
    (plugin) => Object.keys(snapshot.plugins.get(plugin)?.accounts ?? {}).length > 0,
  );
}

/** Registers the built-in kinds, once (loading their modules the first time). */
export async function ensureBuiltinKinds(registry: KindRegistry): Promise<void> {
  const { builtinKinds } = await import('./builtin-kinds.js');
  for (const kind of builtinKinds) registry.register(kind);
}

/**
 * `registry`'s kinds and package failures plus the built-in kinds, in a new registry: what a preview
 * validates with when the reload would register the built-in kinds. `registry` stays as it is, so a preview
 * offers agents no kind's tool.
 */
export async function withBuiltinKinds(registry: KindRegistry): Promise<KindRegistry> {
  const copy = createKindRegistry();
  await ensureBuiltinKinds(copy);
  for (const kind of registry.list()) copy.register(kind, registry.originOf(kind.kind));
  for (const failure of registry.failedPackages()) copy.recordPackageFailure(failure);
  return copy;
}

/**
 * The kinds `snapshot` needs: the built-in ones when it does (`needsBuiltinKinds`), plus those of
 * `kindPackages`, resolved from `fromDir` (the config directory).
 */
export async function buildKindRegistry(
  snapshot: ConfigSnapshot,
  kindPackages: readonly string[],
  fromDir: string,
  logger: Logger | null,
): Promise<KindRegistry> {
  const registry = createKindRegistry();
  if (needsBuiltinKinds(snapshot)) await ensureBuiltinKinds(registry);
  await loadListedKindPackages(registry, kindPackages, fromDir, logger);
  return registry;
}

/** Loads the listed packages not loaded yet (a failed one is tried again) and logs what happened. */
export async function loadListedKindPackages(
  registry: KindRegistry,
  kindPackages: readonly string[],
  fromDir: string,
  logger: Logger | null,
): Promise<void> {
  const r = await loadKindPackages(registry, kindPackages, { fromDir });
  for (const l of r.loaded)
    logger?.info('poller kind package loaded', {
      package: l.package,
      kinds: l.kinds,
      version: versionOf(l.package, fromDir),
    });
  for (const f of r.failed)
    logger?.error('poller kind package failed to load', { package: f.package, code: f.code, err: f.message });
}

function versionOf(name: string, fromDir: string): string | undefined {
  try {
    const req = createRequire(join(fromDir, 'package.json'));
    return (JSON.parse(readFileSync(req.resolve(`${name}/package.json`), 'utf8')) as { version?: string })
      .version;
  } catch {
    // Packages may hide package.json behind `exports`; the version is only informative.
    return undefined;
  }
}
