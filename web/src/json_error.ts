// Where a JSON text first goes wrong: a small strict scanner that returns the offset and a
// sentence. Browsers word JSON.parse errors differently and do not all give a position.

export interface JsonErrorAt {
  offset: number;
  line: number;
  column: number;
  message: string;
}

/** Null when `text` is valid JSON, else the first error with its line and column. */
export function findJsonError(text: string): JsonErrorAt | null {
  let i = 0;
  const n = text.length;
  class Fail extends Error {}
  const fail = (msg: string): never => {
    throw new Fail(msg);
  };
  const ws = () => {
    while (i < n && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) ++i;
  };
  const describe = () => (i >= n ? 'the end of the text' : `'${text[i]}'`);
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail(`unexpected ${describe()}`);
  };
  const string = () => {
    ++i; // opening quote
    while (i < n && text[i] !== '"') {
      const c = text.charCodeAt(i);
      if (c < 0x20) fail('control character inside a string (use \\n for a newline)');
      if (text[i] === '\\') {
        ++i;
        if (text[i] === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail('bad \\u escape');
          i += 5;
          continue;
        }
        if (!'"\\/bfnrt'.includes(text[i] ?? '')) fail('bad escape in a string');
      }
      ++i;
    }
    if (i >= n) fail('unterminated string');
    ++i;
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail(`unexpected ${describe()}`);
    i += m![0].length;
  };
  const value = (depth: number): void => {
    if (depth > 512) fail('nested too deeply');
    ws();
    const c = text[i];
    if (c === '{') {
      ++i;
      ws();
      if (text[i] === '}') {
        ++i;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail(text[i] === '}' ? 'trailing comma before }' : `expected a "key" in quotes, found ${describe()}`);
        string();
        ws();
        if (text[i] !== ':') fail(`expected ':' after the key, found ${describe()}`);
        ++i;
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          ++i;
          continue;
        }
        if (text[i] === '}') {
          ++i;
          return;
        }
        fail(`expected ',' or '}' , found ${describe()}`);
      }
    } else if (c === '[') {
      ++i;
      ws();
      if (text[i] === ']') {
        ++i;
        return;
      }
      for (;;) {
        ws();
        if (text[i] === ']') fail('trailing comma before ]');
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          ++i;
          continue;
        }
        if (text[i] === ']') {
          ++i;
          return;
        }
        fail(`expected ',' or ']', found ${describe()}`);
      }
    } else if (c === '"') string();
    else if (c === 't') literal('true');
    else if (c === 'f') literal('false');
    else if (c === 'n') literal('null');
    else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) number();
    else fail(`unexpected ${describe()}`);
  };
  try {
    value(0);
    ws();
    if (i < n) fail(`unexpected ${describe()} after the end of the JSON value`);
    return null;
  } catch (e) {
    if (!(e instanceof Fail)) throw e;
    const before = text.slice(0, i);
    const line = before.split('\n').length;
    const column = i - before.lastIndexOf('\n');
    return { offset: i, line, column, message: e.message };
  }
}
