// Headless Chromium (TOOLCHAIN.md flags) against web/dist served from 127.0.0.1 on a free
// port; both started and stopped by the test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
// @ts-expect-error plain ESM helper without types
import { startStaticServer } from '../../scripts/static-server.mjs';

export { startStaticServer };

export const WEB = resolve(__dirname, '..', '..');
export const DIST = join(WEB, 'dist');
export const ARTIFACTS = join(WEB, 'test-results');

export interface Session {
  url: string;
  browser: Browser;
  context: BrowserContext;
  newPage(hash?: string): Promise<Page>;
  close(): Promise<void>;
  /** Console errors and CSP violations seen on any page. */
  errors: string[];
}

export async function startSession(options: { viewport?: { width: number; height: number }; hasTouch?: boolean; isMobile?: boolean } = {}): Promise<Session> {
  const server = await startStaticServer(DIST, 0);
  const userDataDir = mkdtempSync(join(tmpdir(), 'proteus-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    viewport: options.viewport ?? { width: 1440, height: 1000 },
    hasTouch: options.hasTouch,
    isMobile: options.isMobile,
  });
  const errors: string[] = [];
  const session: Session = {
    url: server.url,
    browser: context.browser()!,
    context,
    errors,
    async newPage(hash = '') {
      const page = await context.newPage();
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(server.url + hash);
      return page;
    },
    async close() {
      await context.close();
      await server.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
  return session;
}

/** Waits until the page shows a result (cards filled) and no simulation runs. */
export async function waitForResult(page: Page, timeout = 60_000): Promise<void> {
  await page.waitForFunction(() => document.body.classList.contains('has-result') && !document.body.classList.contains('running'), null, { timeout });
}
