/**
 * A command's options as data: yargs declares them from it (help, full parsing), and the plain-line parser
 * (`plain-line.ts`) reads the same table, so that both take the same options with the same defaults.
 */
interface OptionSpec {
  type: 'string' | 'boolean';
  default?: string | boolean;
  requiresArg?: boolean;
  /** The values a string option takes. */
  choices?: readonly string[];
  describe: string;
}

export type OptionTable = Readonly<Record<string, OptionSpec>>;
