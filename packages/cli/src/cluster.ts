/** What `agent cluster status` does: the members, their config versions and leases, from the admin API. */
import type { AdminClusterStatus } from '@agent/admin-api';
import { adminRequest, closeAdminClient, CliError, resolveAdminTarget } from './admin-client.js';
import { formatClusterStatus } from './cluster-status.js';
import type { CliIO } from './io.js';

interface ClusterStatusArgs {
  adminUrl?: string;
  configDir: string;
  json: boolean;
}

/** 0: every member is live and on the desired config; 1: no answer (or single-host mode); 2: a member is stale or behind. */
export async function runClusterStatus(io: CliIO, args: ClusterStatusArgs): Promise<number> {
  try {
    const target = resolveAdminTarget({
      adminUrl: args.adminUrl,
      configDir: args.configDir,
      cwd: io.cwd,
      env: io.env,
    });
    const view = await adminRequest<AdminClusterStatus>(target, 'GET', '/admin/cluster');
    if (args.json) io.out(JSON.stringify(view, null, 2));
    else for (const l of formatClusterStatus(view, io.color)) io.out(l);
    const behind = view.members.some(
      (m) =>
        m.state === 'stale' ||
        (m.state === 'live' && m.applied_config_version !== view.desired_config_version),
    );
    return behind ? 2 : 0;
  } catch (err) {
    if (err instanceof CliError && err.code === 'CLI_DAEMON_DOWN') io.err(`agent cluster: ${err.message}`);
    else io.err(`agent cluster status: ${(err as Error).message}`);
    return 1;
  } finally {
    await closeAdminClient();
  }
}
