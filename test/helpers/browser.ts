import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium on the PATH (never a downloaded browser); .ci/run installs it when missing. */
export function findChromium(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const path = join(dir, name);
      if (existsSync(path)) return path;
    }
  }
  throw new Error('No chromium on the PATH: apt-get install -y chromium');
}

export async function launchBrowser(): Promise<Browser> {
  // No background networking: this machine's network is closed, and Chromium's own calls home are refused or flagged.
  return chromium.launch({
    executablePath: findChromium(),
    args: [
      '--no-sandbox',
      '--disable-dev-shm-usage',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page (evaluated through the debugger, so the page's CSP does not apply). */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3),
    }));
  });
  return violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map((v: any) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.join(', ')}`);
}

const SHOTS = join(import.meta.dirname, '..', '..', 'test-results', 'screenshots');

/**
 * With SCREENSHOTS=1, a screenshot for review in the ignored test-results/screenshots (the page as
 * the viewport shows it, or `fullPage`); without it, nothing: CI has no one to look at them.
 */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  if (!process.env.SCREENSHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: options.fullPage ?? false });
}
