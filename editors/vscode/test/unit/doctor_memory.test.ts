import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapeHtml, renderDoctorBody, renderDoctorHtml, settingRows } from '../../src/model/doctor';
import type { MemoryView, PromotionApplied, PromotionPlan, SkillView } from '../../src/generated/protocol';
import { groupMemories, memoriesFromResult, promotionCandidates, promotionMessage } from '../../src/model/memory';

/** An `autocode.doctor` result: the engine's report plus its text. */
const result = {
  text: 'AutoCode doctor: /repo',
  report: {
    workspace: '/repo',
    settings: {
      test_command: { value: 'pytest -q', origin: 'learned', source: '.autocode/project.json', shadowed: [{ value: 'python -m pytest', origin: 'detected', source: 'pyproject.toml' }] },
      test_timeout: { value: 600, origin: 'default', source: '', shadowed: [] },
    },
    warnings: [],
    record: { status: 'valid', path: '.autocode/project.json', problems: [], data: { framework: 'pytest', test_command: 'pytest -q', routes: [{ role: 'planner', provider: 'fixture', model: 'scenario:default' }], human_pause_states: ['WAITING_FOR_USER'] } },
    conventions: [{ question: 'Which naming convention?', answer: 'test_<behaviour>' }],
    omitted: null,
    gitignore: { state: 'current', record_hidden: false },
    git: { version: '2.39.5', ok: true, message: 'git 2.39.5' },
  },
};
const report = result.report;

test('settings rows come from a mapping or a list', () => {
  const rows = settingRows(report.settings);
  assert.equal(rows[0].name, 'test_command');
  assert.equal(rows[0].origin, 'learned');
  assert.equal(rows[0].shadowed[0].origin, 'detected');
  const fromList = settingRows([{ name: 'provider', value: 'fixture', origin: 'default' }]);
  assert.deepEqual(fromList.map((r) => [r.name, r.value, r.origin]), [['provider', 'fixture', 'default']]);
});

test('the doctor page shows values, origins, shadowed values, record status and conventions', () => {
  const body = renderDoctorBody(result, 'Workspace: app');
  assert.match(body, /<td>test_command<\/td><td><code>pytest -q<\/code><\/td><td class="origin origin-learned">learned<\/td>/);
  assert.match(body, /<code>python -m pytest<\/code> <span class="origin">\(detected: pyproject.toml\)<\/span>/);
  assert.match(body, /Status: <strong class="record-status status-valid">valid<\/strong>/);
  assert.match(body, /<td>human_pause_states<\/td><td><code>WAITING_FOR_USER<\/code><\/td>/);
  assert.match(body, /<td>Which naming convention\?<\/td><td>test_&lt;behaviour&gt;<\/td>/);
  assert.match(body, /<h2>Git<\/h2>/);
  assert.match(body, /<h2>.autocode\/.gitignore<\/h2>/);
  assert.ok(!body.includes('<h2>Warnings</h2>'), 'no empty warnings section');
  assert.ok(!body.includes('Omitted'), 'no empty omitted section');
  assert.equal(renderDoctorBody(report, 'bare report'), renderDoctorBody({ report }, 'bare report'));
  assert.match(body, /<thead><tr><th>role<\/th><th>provider<\/th><th>model<\/th><\/tr><\/thead><tbody>\n<tr><td><code>planner<\/code><\/td>/);
  assert.ok(body.indexOf('Status:') < body.indexOf('Learned conventions') && body.indexOf('Learned conventions') < body.indexOf('<h2 id="settings">'), 'status and conventions come first');
});

test('everything from the server is escaped and the page allows no scripts', () => {
  const html = renderDoctorHtml({ settings: { x: { value: '<script>alert(1)</script>', origin: 'config' } } }, '<b>t</b>', 'vscode-resource:');
  assert.ok(!html.includes('<script>alert'));
  assert.ok(html.includes('&lt;script&gt;'));
  assert.match(html, /default-src 'none'/);
  assert.equal(escapeHtml(`"'&`), '&quot;&#39;&amp;');
});

test('a missing record says so instead of failing', () => {
  const body = renderDoctorBody({ report: { settings: {}, record: { status: 'missing', path: '.autocode/project.json', problems: [], data: null }, conventions: [] } }, '');
  assert.match(body, /status-missing/);
  assert.match(body, /No learned conventions/);
  const invalid = renderDoctorBody({ report: { settings: {}, record: { status: 'invalid', problems: ['schema_version: unsupported'], data: null } } }, '');
  assert.match(invalid, /<li>schema_version: unsupported<\/li>/);
  assert.match(invalid, /ignored until it is fixed/);
});

/** A `MemoryView` as the server sends it (every field; the wire's names). */
function memory(over: Partial<MemoryView>): MemoryView {
  return { id: 'm', content: 'c', category: null, scope: 'global', repository: null, owner: null, shared: false,
    createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', runId: null, score: null, ...over };
}

function skill(name: string, owner: string): SkillView {
  return { id: `${name}-${owner}`, name, owner, description: '', category: null, content: '', scope: 'global', repository: null,
    origin: 'promotion', sourceMemoryId: 'm1' } as SkillView;
}

test('memories group into agent/team × project/global, project groups only with a repository', () => {
  const items = memoriesFromResult({ memories: [
    memory({ id: '1', content: 'use uv', scope: 'project', repository: 'github.com/x/y', owner: 'implementer' }),
    memory({ id: '2', content: 'team rule', scope: 'global', shared: true }),
    memory({ id: '3', content: 'repo fact', scope: 'project', repository: 'github.com/x/y', owner: 'reviewer' }),
  ] });
  assert.deepEqual(items.map((m) => `${m.owner}/${m.scope}/${m.agent}`), ['agent/project/implementer', 'team/global/', 'agent/project/reviewer']);
  const groups = groupMemories(items, true);
  assert.deepEqual(groups.map((g) => `${g.id}:${g.items.length}`), ['agent/project:2', 'agent/global:0', 'team/project:0', 'team/global:1']);
  assert.deepEqual(groupMemories(items, false).map((g) => g.id), ['agent/global', 'team/global']);
});

test('search results with scores and a promotion plan', () => {
  const results = memoriesFromResult({ query: 'c', method: 'fts', memories: [memory({ id: 'm', score: 0.5 })] });
  assert.equal(results[0].score, 0.5);
  assert.throws(() => memoriesFromResult({ memories: [memory({ id: '' })] }), /no id/);
  const candidates = promotionCandidates({ scanned: 3, candidates: [
    { memoryId: 'm1', name: 'run-db-tests', description: 'Shared by 2 agents', category: 'testing', content: 'Tests need TEST_DATABASE_URL', agents: ['implementer', 'reviewer'], scope: 'project', repository: 'github.com/x/y' },
    { memoryId: 'm2', name: 'other', description: '', category: null, content: 'y', agents: [], scope: 'global', repository: null },
  ] } as PromotionPlan);
  assert.deepEqual(candidates.map((c) => [c.id, c.skillName, c.selected, c.reason, c.agents.length]), [['m1', 'run-db-tests', true, 'Shared by 2 agents', 2], ['m2', 'other', true, '', 0]]);
});

test('an applied promotion names the skills once, whatever agents got them', () => {
  const applied = { skills: [skill('prefer-small-commits', 'implementer'), skill('prefer-small-commits', 'reviewer')], removed: ['m1'] } as PromotionApplied;
  assert.equal(promotionMessage(applied), 'AutoCode: promoted 1 memory into the skill prefer-small-commits.');
  assert.equal(promotionMessage({ skills: [], removed: [] } as unknown as PromotionApplied), 'AutoCode: promoted 0 memories.');
});
