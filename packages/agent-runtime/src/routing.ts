/** Which agent binding takes an inbound message, and which channel instance an agent sends through. */
import type { Binding, ConfigSnapshot } from '@agent/config-snapshot';
import { AgentRuntimeError } from './errors.js';

export interface BindingMatch {
  agentId: string;
  bindingIndex: number;
  binding: Readonly<Binding>;
}

function bindingTakes(binding: Readonly<Binding>, plugin: string, instance: string): boolean {
  return binding.plugin === plugin && (binding.instance === undefined || binding.instance === instance);
}

/**
 * The first binding that takes a message from `plugin`/`instance`: agents in ascending id order
 * (code-unit order), then bindings in file order. A binding without `instance` takes every instance.
 */
export function matchBinding(
  snapshot: ConfigSnapshot,
  plugin: string,
  instance: string,
): BindingMatch | undefined {
  const ids = [...snapshot.agents.keys()].sort();
  for (const agentId of ids) {
    const bindings = snapshot.agents.get(agentId)?.definition.inbound_bindings ?? [];
    for (let i = 0; i < bindings.length; i++) {
      const binding = bindings[i];
      if (binding && bindingTakes(binding, plugin, instance)) return { agentId, bindingIndex: i, binding };
    }
  }
  return undefined;
}

/** True when the agent's binding `bindingIndex` in `snapshot` still takes messages from plugin/instance. */
export function bindingStillTakes(
  snapshot: ConfigSnapshot,
  agentId: string,
  bindingIndex: number,
  plugin: string,
  instance: string,
): Readonly<Binding> | undefined {
  const binding = snapshot.agents.get(agentId)?.definition.inbound_bindings[bindingIndex];
  return binding && bindingTakes(binding, plugin, instance) ? binding : undefined;
}

export interface OutboundTarget {
  bindingIndex: number;
  plugin: string;
  instance: string;
}

/**
 * The instance an agent sends through on `channel`: its first binding with `plugin === channel`
 * (or `preferIndex`, when that binding is on `channel`), then the binding's `instance`, or the
 * plugin's first configured instance when the binding names none.
 */
export function resolveOutbound(
  snapshot: ConfigSnapshot,
  agentId: string,
  channel: string,
  preferIndex?: number,
): OutboundTarget {
  const agent = snapshot.agents.get(agentId);
  if (!agent) {
    throw new AgentRuntimeError(
      'RUNTIME_UNKNOWN_AGENT',
      `agent "${agentId}" does not exist; check the agent id (the file name in agents.d/)`,
    );
  }
  const bindings = agent.definition.inbound_bindings;
  let bindingIndex = -1;
  if (preferIndex !== undefined && bindings[preferIndex]?.plugin === channel) bindingIndex = preferIndex;
  else bindingIndex = bindings.findIndex((b) => b.plugin === channel);
  const binding = bindings[bindingIndex];
  if (!binding) {
    throw new AgentRuntimeError(
      'RUNTIME_NO_BINDING',
      `agent "${agentId}" has no binding for channel "${channel}"; add an inbound_bindings entry with plugin: ${channel} to agents.d/${agentId}.yaml`,
    );
  }
  let instance = binding.instance;
  if (instance === undefined) {
    instance = Object.keys(snapshot.plugins.get(channel)?.instances ?? {})[0];
    if (instance === undefined) {
      throw new AgentRuntimeError(
        'RUNTIME_NO_INSTANCE',
        `channel "${channel}" has no instance; define one under instances in plugins/${channel}.yaml`,
      );
    }
  }
  return { bindingIndex, plugin: channel, instance };
}
