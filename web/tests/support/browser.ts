// Headless Chromium (TOOLCHAIN.md flags) against web/dist served from 127.0.0.1 on a free
// port; both started and stopped by the test.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
// @ts-expect-error plain ESM helper without types
import { startStaticServer } from '../../scripts/static-server.mjs';
// @ts-expect-error plain ESM helper without types
import { CHROMIUM_FLAGS, CHROMIUM_PATH } from '../../scripts/chromium.mjs';
// @ts-expect-error plain ESM helper without types
import { waitForNew as waitForNewShared, waitForResult as waitForResultShared } from '../../scripts/page_states.mjs';

export { startStaticServer };

export const WEB = resolve(__dirname, '..', '..');
export const DIST = join(WEB, 'dist');
/** Where the tests' screenshots go: artifacts only. docs/images is written by `npm run screenshot`. */
export const ARTIFACTS = join(WEB, 'test-results');
const AXE = join(WEB, 'node_modules', 'axe-core', 'axe.min.js');

export interface Session {
  url: string;
  browser: Browser;
  context: BrowserContext;
  newPage(hash?: string): Promise<Page>;
  close(): Promise<void>;
  /** Console errors and CSP violations seen on any page. */
  errors: string[];
}

export async function startSession(options: SessionOptions = {}): Promise<Session> {
  const server = await startStaticServer(DIST, 0);
  const userDataDir = mkdtempSync(join(tmpdir(), 'proteus-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_FLAGS,
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

export interface SessionOptions {
  viewport?: { width: number; height: number };
  hasTouch?: boolean;
  isMobile?: boolean;
}

export interface OpenOptions extends SessionOptions {
  /** Browser permissions granted to the page's origin before it opens (e.g. the clipboard). */
  permissions?: string[];
  /** Also wait for the first result (the default scenario's cards). */
  waitForResult?: boolean;
}

/**
 * The set-up every browser test file shares: the built page must exist, the screenshot
 * folder is made, a session starts and the page opens. Close `session` in afterAll.
 */
export async function openPage(options: OpenOptions = {}): Promise<{ session: Session; page: Page }> {
  if (!existsSync(join(DIST, 'index.html'))) throw new Error('web/dist not found: run `npm run build` first');
  mkdirSync(ARTIFACTS, { recursive: true });
  const session = await startSession(options);
  try {
    if (options.permissions) await session.context.grantPermissions(options.permissions, { origin: session.url });
    const page = await session.newPage();
    if (options.waitForResult) await waitForResult(page);
    return { session, page };
  } catch (e) {
    await session.close(); // the caller never gets the session to close
    throw e;
  }
}

/** axe-core's WCAG 2 A/AA violations under `rootId` (the whole document without it), one line each. */
export async function axeViolations(page: Page, rootId?: string): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(readFileSync(AXE, 'utf8'));
  return page.evaluate(async (id) => {
    const root = id === undefined ? document : document.getElementById(id);
    const r = await (window as any).axe.run(root, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } });
    return r.violations.map((v: any) => `${v.id}: ${v.nodes.length} (${v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')).join(' | ')})`);
  }, rootId);
}

/** Waits until the page shows a result and nothing runs (scripts/page_states.mjs). */
export const waitForResult: (page: Page, timeout?: number) => Promise<void> = waitForResultShared;

/** Waits for a simulation after the first `previousCount`, settled, with a good status (scripts/page_states.mjs). */
export const waitForNew: (page: Page, previousCount: number) => Promise<void> = waitForNewShared;
