// What the language status item and the tree views say, without the editor API
// (so the unit tests can check it).

/** `text` on one line, cut to `max` characters with an ellipsis (the full text goes in a tooltip). */
export function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** A tree label at most `max` long; the tooltip carries the full text when the label was cut. */
export function labelAndTooltip(text: string, max: number, tooltip?: string): { label: string; tooltip: string | undefined } {
  const label = shorten(text, max);
  return { label, tooltip: tooltip ?? (label !== text ? text : undefined) };
}

export interface ServerFacts {
  running: boolean;
  /** Why it is not running, when known. */
  problem?: string;
  version?: string;
  python?: string;
  bundled?: boolean;
  /** The workspace's learned record status (`valid`, `missing`, …). */
  record?: string;
}

export interface StatusItemContent {
  text: string;
  detail: string;
  severity: 'information' | 'error';
  command: { title: string; command: string };
}

/** The language status item: running (version, interpreter, record; Show Output) or not (why; Restart). */
export function statusItemContent(facts: ServerFacts): StatusItemContent {
  const where = facts.python ? `${facts.python}${facts.bundled ? ' (bundled server)' : ''}` : '';
  if (facts.running) {
    return {
      text: 'AutoCode: running',
      detail: [facts.version ? `v${facts.version}` : '', where, facts.record ? `record: ${facts.record}` : ''].filter(Boolean).join(' · '),
      severity: 'information',
      command: { title: 'Show Output', command: 'autocode.showOutput' },
    };
  }
  return {
    text: 'AutoCode: not running',
    detail: facts.problem ? shorten(facts.problem, 120) : where,
    severity: 'error',
    command: { title: 'Restart', command: 'autocode.restartServer' },
  };
}
