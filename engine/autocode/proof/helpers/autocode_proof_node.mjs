// A node --test reporter that writes each test's start and end as JSON lines (name, nesting,
// file, skip/todo, error text), for AutoCode to name the tests exactly. Loaded with
// --test-reporter=<this file> next to the person's own reporter, which still prints.
const LIMIT = 4000;

function text(error) {
  if (!error) return undefined;
  const cause = error.cause !== undefined ? error.cause : error;
  const shown = cause && cause.stack ? cause.stack : String(cause);
  return shown.length > LIMIT ? shown.slice(shown.length - LIMIT) : shown;
}

export default async function* reporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:start' && event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const data = event.data || {};
    const details = data.details || {};
    yield JSON.stringify({
      event: event.type,
      name: data.name,
      nesting: data.nesting,
      file: data.file,
      kind: details.type,
      skip: data.skip !== undefined && data.skip !== false,
      todo: data.todo !== undefined && data.todo !== false,
      error: event.type === 'test:fail' ? text(details.error) : undefined,
    }) + '\n';
  }
}
