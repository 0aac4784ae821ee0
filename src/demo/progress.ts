export interface Progress {
  update(done: number): void;
  finish(): void;
}

const WIDTH = 30;

/** A progress bar redrawn in place on a terminal; elsewhere plain lines every few seconds. */
export function createProgress(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  const started = performance.now();
  const tty = Boolean(stream.isTTY);
  let last = 0;
  let lastDone = -1;
  const render = (done: number, final: boolean) => {
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? Math.round(done / seconds) : 0;
    const share = total === 0 ? 1 : done / total;
    const counts = `${done.toLocaleString('en')}/${total.toLocaleString('en')} ${label}  ${rate.toLocaleString('en')}/s`;
    if (tty) {
      const filled = Math.round(share * WIDTH);
      const bar = `${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}`;
      stream.write(`\r[${bar}] ${String(Math.floor(share * 100)).padStart(3)}%  ${counts}\x1b[K${final ? '\n' : ''}`);
    } else {
      stream.write(`${Math.floor(share * 100)}%  ${counts}\n`);
    }
  };
  return {
    update(done) {
      const now = performance.now();
      if (now - last < (tty ? 100 : 5_000) || done === lastDone) return;
      last = now;
      lastDone = done;
      render(done, false);
    },
    finish() {
      render(total, true);
    },
  };
}

/** One progress bar per table copied, on stderr, so that stdout stays what the command answers. */
export function tableProgress(): ((table: string, done: number, total: number) => void) & { finish(): void } {
  let current: { table: string; bar: Progress } | null = null;
  const report = (table: string, done: number, total: number) => {
    if (current?.table !== table) {
      current?.bar.finish();
      current = { table, bar: createProgress(table, total) };
    }
    current.bar.update(done);
  };
  return Object.assign(report, { finish: () => current?.bar.finish() });
}
