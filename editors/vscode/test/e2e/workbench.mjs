// Helpers that drive the VS Code workbench served by code-server through
// Playwright and Debian's Chromium: the command palette, quick inputs, modal
// dialogs, notifications, view text and webview text, with a screenshot per
// step.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const CHROMIUM_FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export class Workbench {
  static async open({ url, artifacts, executablePath = process.env.CHROMIUM || '/usr/bin/chromium', userDataDir }) {
    mkdirSync(artifacts, { recursive: true });
    const browser = await chromium.launch({ executablePath, headless: true, args: [...CHROMIUM_FLAGS, ...(userDataDir ? [`--user-data-dir=${userDataDir}`] : [])] });
    const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
    const wb = new Workbench(browser, page, artifacts);
    page.on('console', (msg) => { if (msg.type() === 'error') wb.consoleErrors.push(msg.text()); });
    await page.goto(url);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    // The workbench paints before extensions activate; the status bar entry is ours. A window
    // without a git folder does not activate the extension until a view or command is used: there
    // the activity bar entry (contributed statically) is what to wait for.
    const empty = /[?&]ew=true/.test(url);
    const ours = empty
      ? page.locator('.activitybar .action-item [aria-label^="AutoCode"]')
      : page.locator('.statusbar-item', { hasText: 'AutoCode' });
    await ours.first().waitFor({ timeout: 60000 });
    return wb;
  }

  constructor(browser, page, artifacts) {
    this.browser = browser;
    this.page = page;
    this.artifacts = artifacts;
    this.shots = [];
    this.step = 0;
    this.consoleErrors = [];
  }

  async shot(name) {
    this.step += 1;
    const file = join(this.artifacts, `${String(this.step).padStart(2, '0')}-${name}.png`);
    await this.page.screenshot({ path: file });
    this.shots.push(file);
    return file;
  }

  quickInput() {
    return this.page.locator('.quick-input-widget');
  }

  /** Runs a command by its palette title, e.g. "AutoCode: Start Task". */
  async palette(title) {
    await this.dismissQuickInput();
    await this.page.keyboard.press('F1');
    const input = this.quickInput().locator('input.input');
    await input.waitFor({ state: 'visible', timeout: 15000 });
    await input.fill(`>${title}`);
    const row = this.quickInput().locator('.monaco-list-row', { hasText: title }).first();
    await row.waitFor({ state: 'visible', timeout: 15000 });
    await this.page.keyboard.press('Enter');
  }

  /** "File: Save All", then waits until no editor tab is left unsaved: the write is
   *  asynchronous, and a window closed right after the command can lose it. A busy machine can
   *  drop the palette's Enter, so the command runs again while a tab stays unsaved. */
  async saveAll(timeout = 30000) {
    const dirty = this.page.locator('.tabs-container .tab.dirty');
    const deadline = Date.now() + timeout;
    for (;;) {
      await this.palette('File: Save All');
      const saved = await dirty.first().waitFor({ state: 'detached', timeout: 5000 }).then(() => true).catch(() => false);
      if (saved) return;
      if (Date.now() > deadline) throw new Error(`still unsaved after Save All: ${JSON.stringify(await dirty.allInnerTexts())}`);
    }
  }

  async dismissQuickInput() {
    if (await this.quickInput().isVisible()) {
      await this.page.keyboard.press('Escape');
      await this.quickInput().waitFor({ state: 'hidden', timeout: 5000 }).catch(() => {});
    }
  }

  /** Waits for a quick input whose title, prompt or placeholder contains `text`; returns its visible text. */
  async waitForQuickInput(text, timeout = 60000) {
    const widget = this.quickInput();
    await widget.waitFor({ state: 'visible', timeout });
    const deadline = Date.now() + timeout;
    for (;;) {
      const visibleText = await this.quickInputText();
      if (!text || visibleText.includes(text)) return visibleText;
      if (Date.now() > deadline) throw new Error(`quick input never showed "${text}"; it shows: ${visibleText}`);
      await this.page.waitForTimeout(200);
    }
  }

  /** Waits (up to `timeout` ms) until the keyboard focus is in the quick input, as a person sees the
   *  caret there before pressing a key: the list can show its highlighted row a moment before the
   *  input takes the focus, and a key pressed then goes to whatever had it. True when it got there. */
  async quickInputHasFocus(timeout = 10000) {
    return this.page.waitForFunction(() => !!document.activeElement?.closest('.quick-input-widget'), null,
      { timeout, polling: 100 }).then(() => true, () => false);
  }

  /** Where the keyboard focus is: the focused element's tag, class and label (for a failure's report). */
  async focusedElement() {
    return this.page.evaluate(() => {
      const a = document.activeElement;
      return a ? `${a.tagName.toLowerCase()}.${a.className} ${a.getAttribute('aria-label') ?? ''}`.trim() : 'nothing';
    });
  }

  async quickInputText() {
    const widget = this.quickInput();
    if (!(await widget.isVisible())) return '';
    const placeholder = await widget.locator('input.input').getAttribute('placeholder').catch(() => '');
    const body = await widget.innerText().catch(() => '');
    return `${body}\n${placeholder ?? ''}`;
  }

  async typeIntoQuickInput(text) {
    const input = this.quickInput().locator('input.input');
    await input.fill(text);
    await this.page.keyboard.press('Enter');
  }

  /** Picks the quick-pick row showing `label`. */
  async pickQuickInputRow(label) {
    const row = this.quickInput().locator('.monaco-list-row', { hasText: label }).first();
    await row.waitFor({ state: 'visible', timeout: 15000 });
    await row.click();
  }

  dialog() {
    return this.page.locator('.monaco-dialog-box');
  }

  async waitForDialog(text, timeout = 60000) {
    const box = this.dialog();
    await box.waitFor({ state: 'visible', timeout });
    if (text) await this.page.locator('.monaco-dialog-box', { hasText: text }).waitFor({ timeout });
    return box.innerText();
  }

  async clickDialogButton(label) {
    await this.dialog().locator('.monaco-button', { hasText: label }).first().click();
    await this.dialog().waitFor({ state: 'hidden', timeout: 15000 });
  }

  /** Texts of the visible notification toasts. */
  async notifications() {
    return this.page.locator('.notifications-toasts .notification-toast').allInnerTexts();
  }

  async waitForNotification(text, timeout = 60000) {
    const toast = this.page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();
    await toast.waitFor({ state: 'visible', timeout });
    return toast.innerText();
  }

  /** The actions of a notification toast: its buttons and the command links of its message. */
  notificationActions(toast) {
    return toast.locator('.monaco-button, .notification-list-item-message a');
  }

  /** Clicks a button (or action link) of the notification toast that shows `text`. */
  async clickNotificationButton(text, button, timeout = 60000) {
    const toast = this.page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();
    await toast.waitFor({ state: 'visible', timeout });
    await this.notificationActions(toast).filter({ hasText: button }).first().click();
  }

  /** Texts of every notification the notification centre holds (toasts that timed out included). */
  async notificationCenter() {
    await this.palette('Notifications: Show Notifications');
    await this.page.locator('.notifications-center').first().waitFor({ state: 'visible', timeout: 15000 });
    const texts = await this.page.locator('.notifications-center .notification-list-item').allInnerTexts();
    await this.palette('Notifications: Hide Notifications');
    return texts;
  }

  /** An action of the visible editor title bars, by its title (aria-label). */
  editorAction(title) {
    return this.page.locator(`.editor-actions .action-label[aria-label^="${title}"]`).first();
  }

  /** Titles of the open editor tabs. */
  async tabTitles() {
    return this.page.locator('.tabs-container .tab .label-name').allInnerTexts();
  }

  async showAutoCodeViews() {
    await this.palette('AutoCode: Focus on Tasks View');
    await this.page.locator('.pane-header', { hasText: 'Tasks' }).first().waitFor({ timeout: 15000 });
  }

  /** The visible text of one view of the AutoCode container (by its title). */
  async viewText(title) {
    const pane = this.page.locator('.pane', { has: this.page.locator('.pane-header', { hasText: title }) }).first();
    return pane.innerText();
  }

  async waitForViewText(title, predicate, timeout = 120000) {
    const deadline = Date.now() + timeout;
    let last = '';
    for (;;) {
      last = await this.viewText(title).catch(() => '');
      if (predicate(last)) return last;
      if (Date.now() > deadline) throw new Error(`view "${title}" never matched; it shows:\n${last}`);
      await this.page.waitForTimeout(300);
    }
  }

  /** The text of the first webview (an iframe, never the workbench itself) whose text matches: a string it contains, or a predicate. */
  async webviewText(match, timeout = 30000) {
    const test = typeof match === 'function' ? match : (text) => text.includes(match);
    const deadline = Date.now() + timeout;
    for (;;) {
      for (const frame of this.page.frames()) {
        if (frame === this.page.mainFrame()) continue;
        const text = await frame.evaluate(() => document.body?.innerText ?? '').catch(() => '');
        if (text && test(text)) return text;
      }
      if (Date.now() > deadline) throw new Error(`no webview shows ${typeof match === 'function' ? 'the expected text' : `"${match}"`}`);
      await this.page.waitForTimeout(300);
    }
  }

  /** Closes every notification toast, so screenshots show the editor. */
  async clearNotifications() {
    await this.palette('Notifications: Clear All Notifications');
    await this.page.waitForTimeout(300);
  }

  async close() {
    await this.browser.close();
  }
}
