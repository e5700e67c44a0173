/** The poller kinds that ship with the daemon, and kind packages. */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Logger } from '@agent/log';
import { createKindRegistry, loadKindPackages, type KindRegistry } from '@agent/poller-runtime';
import { calendarPollerKind } from '@agent/poller-kind-calendar';
import { mailPollerKind } from '@agent/poller-kind-mail';
import { rssPollerKind } from '@agent/poller-kind-rss';
import { webhookPollerKind } from '@agent/poller-kind-webhook';

export const builtinKinds: readonly unknown[] = [
  mailPollerKind,
  rssPollerKind,
  webhookPollerKind,
  calendarPollerKind,
];

/** The built-in kinds plus those of `kind_packages`, resolved from `fromDir` (the config directory). */
export async function buildKindRegistry(
  kindPackages: readonly string[],
  fromDir: string,
  logger: Logger | null,
): Promise<KindRegistry> {
  const registry = createKindRegistry(builtinKinds);
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
