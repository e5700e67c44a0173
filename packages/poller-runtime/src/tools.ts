/**
 * The agent tools: the six `pollers_*` tools over the operator API, and every kind's own tools bound to the
 * calling agent's shared resource.
 */
import { PollerError, type AgentTool } from '@agent/poller-core';
import type { JobRuntime } from './job.js';
import { unknownJob } from './operator.js';
import type { KindRegistry } from './registry.js';
import type { OperatorApi } from './runner-api.js';
import type { SharedResources } from './shared.js';

type Args = Record<string, unknown>;

function tool(
  name: string,
  description: string,
  parameters: Args,
  fn: (args: Args, agentId: string) => Promise<unknown>,
): AgentTool {
  return {
    name,
    description,
    parameters,
    async handler(args, ctx) {
      const a = args ?? {};
      ctx.logger.info('poller tool call', {
        agent_id: ctx.agentId,
        tool: name,
        job_id: typeof a.id === 'string' ? a.id : undefined,
      });
      return fn(a, ctx.agentId);
    },
  };
}

const idParam = {
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  properties: { id: { type: 'string', description: 'Job id.' } },
};

const resetParams = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'confirm'],
  properties: { id: { type: 'string' }, confirm: { type: 'boolean', description: 'Must be true.' } },
};

export function buildTools(deps: {
  api: OperatorApi;
  jobs: ReadonlyMap<string, JobRuntime>;
  registry: KindRegistry;
  shared: SharedResources;
}): AgentTool[] {
  const { api, jobs } = deps;
  const anyJob = (args: Args): string => {
    const id = typeof args.id === 'string' ? args.id : '';
    if (!jobs.has(id)) throw unknownJob(id);
    return id;
  };
  const ownJob = (agentId: string, args: Args): string => {
    const id = anyJob(args);
    // Beyond the spec: agents see every job (spec 4.5) but change only their own; another agent's job
    // looks unknown to run, pause, resume and reset.
    if (jobs.get(id)!.def.agent !== agentId) throw unknownJob(id);
    return id;
  };
  const reset = async (a: Args, agentId: string) => {
    const id = ownJob(agentId, a);
    if (a.confirm !== true)
      throw new PollerError(
        'POLLER_CONFIRM_REQUIRED',
        `reset of "${id}" is destructive; call again with confirm: true`,
      );
    return api.reset(id);
  };
  return [
    tool(
      'pollers_list',
      'List every poller job and its status.',
      { type: 'object', additionalProperties: false, properties: {} },
      async () => api.list(),
    ),
    tool('pollers_show', 'Show one poller job in detail (secrets redacted).', idParam, (a) =>
      api.show(anyJob(a)),
    ),
    tool('pollers_run', 'Run one poller job now (delivers new items).', idParam, (a, agentId) =>
      api.run(ownJob(agentId, a)),
    ),
    tool('pollers_pause', 'Pause a poller job.', idParam, (a, agentId) => api.pause(ownJob(agentId, a))),
    tool('pollers_resume', 'Resume a paused poller job.', idParam, (a, agentId) =>
      api.resume(ownJob(agentId, a)),
    ),
    tool(
      'pollers_reset',
      'Wipe the cursor, seen items and errors of a poller job (destructive: the next tick records a new baseline). Needs confirm: true.',
      resetParams,
      reset,
    ),
    ...kindTools(deps.registry, deps.shared),
  ];
}

function kindTools(registry: KindRegistry, shared: SharedResources): AgentTool[] {
  return registry.list().flatMap((kind) =>
    (kind.tools ?? []).map((kt): AgentTool => ({
      name: kt.name,
      description: kt.description,
      parameters: kt.parameters,
      async handler(args, ctx) {
        ctx.logger.info('poller tool call', { agent_id: ctx.agentId, tool: kt.name, kind: kind.kind });
        return kt.handler(args ?? {}, { ...ctx, shared: await shared.get(ctx.agentId, kind) });
      },
    })),
  );
}
