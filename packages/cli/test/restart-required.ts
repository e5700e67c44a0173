/** A restart-required change with every field the daemon gives, and the line the CLI prints for it. */
import type { RestartRequiredJson } from '@agent/admin-api';

/** Agent `a`'s workspace, located in its file. */
export const workspaceRestart: RestartRequiredJson = {
  agent_id: 'a',
  field: 'workspace',
  reason: 'the agent keeps its running workspace until the daemon restarts',
  file: 'config/agents.d/a.yaml',
  line: 11,
};

/** `workspaceRestart` in the output of `agent reload` and `agent pollers reload`. */
export const workspaceRestartLine =
  '  ! restart required: a workspace (config/agents.d/a.yaml:11): the agent keeps its running workspace until the daemon restarts';
