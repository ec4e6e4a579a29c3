// How often the extension starts the language server again after it stopped
// on its own (crashed, killed). The language client's own restart is turned
// off (see client.ts): each restart is a fresh client, and after too many in a
// short time the extension stops trying and says so.

export const MAX_RESTARTS = 3;
export const RESTART_WINDOW_MS = 3 * 60 * 1000;

export class RestartBudget {
  private times: number[] = [];

  constructor(readonly max = MAX_RESTARTS, readonly windowMs = RESTART_WINDOW_MS) {}

  /** Takes one restart at `now` if the budget allows it; false once `max` were taken within the window. */
  take(now: number): boolean {
    this.times = this.times.filter((t) => now - t < this.windowMs);
    if (this.times.length >= this.max) return false;
    this.times.push(now);
    return true;
  }

  /** Restarts taken within the window ending at `now`. */
  used(now: number): number {
    return this.times.filter((t) => now - t < this.windowMs).length;
  }

  /** A restart the person asked for starts with a full budget. */
  reset(): void {
    this.times = [];
  }
}

/** What the person reads once the extension stopped restarting the server. */
export function gaveUpText(restarts: number, windowMs = RESTART_WINDOW_MS): string {
  const minutes = Math.round(windowMs / 60000);
  return `The AutoCode language server stopped and is not running: it was restarted ${restarts} times in ${minutes} minutes and stopped each time. ` +
    'Run "AutoCode: Restart Language Server" to try again, or "AutoCode: Show Output" to see why.';
}
