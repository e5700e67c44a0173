/** System prompt of a turn: agent prompt, the binding's extra text, then the agent's skills. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '@agent/log';

/** Largest skills section, in UTF-16 code units; files past it are left out (logged). */
export const MAX_SKILLS_CHARS = 64_000;

/**
 * Every `*.md` file directly in `skillsDir`, in name order, as a "## Skills" section with one
 * "### <file name>" per file. A missing or empty directory gives `''`.
 */
export function loadSkills(skillsDir: string, logger: Logger, agentId: string): string {
  let names: string[];
  try {
    names = readdirSync(skillsDir, { withFileTypes: true })
      .filter((d) => d.isFile() && d.name.endsWith('.md'))
      .map((d) => d.name)
      .sort();
  } catch {
    return '';
  }
  const parts: string[] = [];
  let size = 0;
  for (const name of names) {
    let text: string;
    try {
      text = readFileSync(join(skillsDir, name), 'utf8').trim();
    } catch (err) {
      logger.warn('skill file unreadable', {
        agent_id: agentId,
        file: name,
        code: (err as { code?: string }).code,
      });
      continue;
    }
    if (text === '') continue;
    const part = `### ${name.slice(0, -3)}\n\n${text}`;
    if (size + part.length > MAX_SKILLS_CHARS) {
      logger.warn('skills too large, rest left out', {
        agent_id: agentId,
        file: name,
        max_chars: MAX_SKILLS_CHARS,
      });
      break;
    }
    parts.push(part);
    size += part.length;
  }
  return parts.length === 0 ? '' : `## Skills\n\n${parts.join('\n\n')}`;
}

/** Non-empty parts joined by a blank line. */
export function buildSystemPrompt(systemPrompt: string, bindingExtra: string, skills: string): string {
  return [systemPrompt, bindingExtra, skills]
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .join('\n\n');
}
