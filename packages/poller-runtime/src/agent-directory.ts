/**
 * What the runtime needs to know of agents and provider accounts, and nothing more: the port through which
 * job validation and shared resources ask, instead of reading the whole configuration snapshot.
 */

export interface AgentDirectory {
  /** Every agent id, sorted. */
  ids(): string[];
  has(agent: string): boolean;
  /** The channel plugins agent `agent` has an inbound binding for. */
  channels(agent: string): string[];
  /** The account agent `agent` names for provider `provider` in its `credentials`, or `null`. */
  accountName(agent: string, provider: string): string | null;
  /** The resolved block of account `name` of provider `provider` (`plugins/<provider>.yaml`), if defined. */
  accountConfig(provider: string, name: string): Readonly<Record<string, unknown>> | undefined;
  /** Hides secret values in `text`. */
  redact(text: string): string;
}

/** The parts of the config snapshot the directory reads (structural: no dependency on its whole type). */
export interface AgentDirectorySource {
  readonly agents: ReadonlyMap<
    string,
    {
      readonly definition: {
        readonly credentials?: Readonly<Record<string, string>>;
        readonly inbound_bindings?: readonly { readonly plugin: string }[];
      };
    }
  >;
  readonly plugins: ReadonlyMap<
    string,
    { readonly accounts: Readonly<Record<string, Readonly<Record<string, unknown>>>> }
  >;
  redact(text: string): string;
}

/** The directory over a configuration snapshot. */
export function agentDirectory(source: AgentDirectorySource): AgentDirectory {
  return {
    ids: () => [...source.agents.keys()].sort(),
    has: (agent) => source.agents.has(agent),
    channels: (agent) => (source.agents.get(agent)?.definition.inbound_bindings ?? []).map((b) => b.plugin),
    accountName: (agent, provider) => source.agents.get(agent)?.definition.credentials?.[provider] ?? null,
    accountConfig: (provider, name) => {
      const accounts = source.plugins.get(provider)?.accounts ?? {};
      return Object.hasOwn(accounts, name) ? accounts[name] : undefined;
    },
    redact: (text) => source.redact(text),
  };
}

/**
 * The configuration as the runtime reads it: the agent directory's source plus the sections (`pollers.yaml`
 * is one). The daemon passes its config snapshot, which has this shape.
 */
export interface RuntimeConfigView extends AgentDirectorySource {
  readonly sections: ReadonlyMap<string, unknown>;
}
