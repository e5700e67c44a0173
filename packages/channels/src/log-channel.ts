import { randomUUID } from 'node:crypto';
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ChannelDeps, ChannelInstance, ChannelPlugin, JsonSchema, SendResult } from './contract.js';
import { ChannelError, ChannelSendError } from './errors.js';
import { checkConfigObject, checkOutbound, depsClock } from './internal.js';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

const PLUGIN = 'log';

/** One `log` instance block. */
export interface LogChannelConfig {
  /** When set, each delivery is also appended to this file as one JSON line. */
  file?: string;
}

export const logInstanceSchema: JsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'log instance',
  type: 'object',
  additionalProperties: false,
  properties: {
    file: { type: 'string', minLength: 1 },
  },
};

/** One line of the `file` of a `log` instance. */
export interface LogDeliveryRecord {
  ts: string;
  plugin: 'log';
  instance: string;
  id: string;
  to: string;
  text: string;
}

export type LogChannelInstance = ChannelInstance<LogChannelConfig>;

function resolveFile(config: unknown): string | undefined {
  const c = checkConfigObject(PLUGIN, config ?? {}, ['file']);
  const file = c.file;
  if (file === undefined) return undefined;
  if (typeof file !== 'string' || file === '') {
    throw new ChannelError('CHANNEL_CONFIG_INVALID', `${PLUGIN}: \`file\` must be a non-empty path`);
  }
  return file;
}

/** `log`: deliveries become log records (and optionally JSON lines); no inbound. */
export const logChannel: ChannelPlugin<LogChannelConfig, LogChannelInstance> = {
  name: PLUGIN,
  instanceSchema: logInstanceSchema,
  create(instance: string, config: LogChannelConfig, deps: ChannelDeps): LogChannelInstance {
    let file = resolveFile(config);
    const { now } = depsClock(deps);
    // Appends go one after another so lines never interleave.
    let queue: Promise<void> = Promise.resolve();
    return {
      start: async () => {},
      stop: async () => {
        await queue;
      },
      updateCredentials(next: LogChannelConfig) {
        file = resolveFile(next);
      },
      async send(msg): Promise<SendResult> {
        checkOutbound(PLUGIN, msg);
        const id = randomUUID();
        deps.logger.info('channel delivery', { plugin: PLUGIN, instance, to: msg.to, text: msg.text });
        if (file !== undefined) {
          const target = file;
          const record: LogDeliveryRecord = {
            ts: now().toISOString(),
            plugin: PLUGIN,
            instance,
            id,
            to: msg.to,
            text: msg.text,
          };
          const write = queue.then(async () => {
            await mkdir(dirname(target), { recursive: true });
            await appendFile(target, JSON.stringify(record) + '\n', 'utf8');
          });
          queue = write.catch(() => {});
          try {
            await write;
          } catch (err) {
            const code = (err as NodeJS.ErrnoException).code ?? 'error';
            throw new ChannelSendError(
              `log: cannot append to ${target} (${code}); check that the path is writable`,
              {
                retryable: false,
              },
            );
          }
        }
        return { ids: [id] };
      },
    };
  },
};
