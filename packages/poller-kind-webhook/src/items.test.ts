import { describe, expect, it } from 'vitest';
import {
  ITEM_ID_MAX_CHARS,
  getAtPath,
  itemId,
  parsePath,
  renderFieldValue,
  resolveItemId,
  selectItems,
  webhookFieldLookup,
} from './items.js';

const response = JSON.parse(`{
  "data": { "items": [{ "id": 1 }, { "id": 2 }], "count": 2, "empty": null },
  "results": [{ "list": ["a", "b"] }, { "list": {} }],
  "0": { "items": ["zero key"] }
}`) as unknown;

describe('parsePath', () => {
  it('splits dotted paths and treats "" as the root', () => {
    expect(parsePath('data.items')).toEqual({ ok: true, segments: ['data', 'items'] });
    expect(parsePath(' results.0.list ')).toEqual({ ok: true, segments: ['results', '0', 'list'] });
    expect(parsePath('')).toEqual({ ok: true, segments: [] });
  });

  it.each([['a..b'], ['.a'], ['a.'], ['.']])('rejects %s', (path) => {
    expect(parsePath(path)).toMatchObject({ ok: false, code: 'WEBHOOK_PATH_INVALID' });
  });

  it('rejects a path that is not a string or is absurdly long', () => {
    expect(parsePath(42 as unknown as string)).toMatchObject({ ok: false, code: 'WEBHOOK_PATH_INVALID' });
    expect(parsePath('a.'.repeat(600) + 'a')).toMatchObject({ ok: false, code: 'WEBHOOK_PATH_INVALID' });
  });
});

describe('getAtPath', () => {
  it('returns a root array for ""', () => {
    expect(getAtPath([1, 2], '')).toEqual({ ok: true, items: [1, 2] });
  });

  it('follows object keys and numeric segments', () => {
    expect(getAtPath(response, 'data.items')).toEqual({ ok: true, items: [{ id: 1 }, { id: 2 }] });
    expect(getAtPath(response, 'results.0.list')).toEqual({ ok: true, items: ['a', 'b'] });
    // A numeric segment on an object is a key lookup.
    expect(getAtPath(response, '0.items')).toEqual({ ok: true, items: ['zero key'] });
  });

  it('explains a missing path', () => {
    expect(getAtPath(response, 'data.list')).toEqual({
      ok: false,
      code: 'WEBHOOK_ITEMS_PATH_MISSING',
      error: 'not an array at data.list: data has no key "list"',
    });
    expect(getAtPath(response, 'results.5.list')).toMatchObject({
      code: 'WEBHOOK_ITEMS_PATH_MISSING',
      error: 'not an array at results.5.list: results has 2 elements, no index 5',
    });
    expect(getAtPath(response, 'results.first')).toMatchObject({
      error: 'not an array at results.first: results is an array, and "first" is not an index',
    });
    expect(getAtPath(response, 'data.count.value')).toMatchObject({
      error: 'not an array at data.count.value: data.count is a number, not an object or array',
    });
    expect(getAtPath(response, 'data.empty.items')).toMatchObject({
      error: 'not an array at data.empty.items: data.empty is null, not an object or array',
    });
  });

  it('explains a path that holds something other than an array', () => {
    expect(getAtPath(response, 'data')).toEqual({
      ok: false,
      code: 'WEBHOOK_ITEMS_NOT_ARRAY',
      error: 'not an array at data: found an object; check items_path',
    });
    expect(getAtPath(response, 'results.1.list')).toMatchObject({ code: 'WEBHOOK_ITEMS_NOT_ARRAY' });
    expect(getAtPath(response, 'data.empty')).toMatchObject({
      error: 'not an array at data.empty: found null; check items_path',
    });
    expect(getAtPath({ a: 1 }, '')).toMatchObject({
      error: 'not an array at the root: found an object; check items_path',
    });
    expect(getAtPath('html', '')).toMatchObject({ code: 'WEBHOOK_ITEMS_NOT_ARRAY' });
    expect(getAtPath(null, 'a')).toMatchObject({ code: 'WEBHOOK_ITEMS_PATH_MISSING' });
  });

  it('never follows inherited properties', () => {
    expect(getAtPath({}, 'constructor')).toMatchObject({ code: 'WEBHOOK_ITEMS_PATH_MISSING' });
    expect(getAtPath([], 'length')).toMatchObject({ code: 'WEBHOOK_ITEMS_PATH_MISSING' });
    expect(getAtPath(JSON.parse('{"__proto__": [1]}'), '__proto__')).toEqual({ ok: true, items: [1] });
  });
});

describe('itemId / resolveItemId', () => {
  it('normalises numbers and strings to the same id', () => {
    expect(itemId({ id: 42 }, 'id')).toBe('42');
    expect(itemId({ id: '42' }, 'id')).toBe('42');
    expect(itemId({ id: -0 }, 'id')).toBe('0');
    expect(itemId({ id: 1e3 }, 'id')).toBe('1000');
    expect(itemId({ id: Number.MAX_SAFE_INTEGER }, 'id')).toBe('9007199254740991');
  });

  it('follows dotted paths, including array indexes', () => {
    expect(itemId({ meta: { ids: ['x-1'] } }, 'meta.ids.0')).toBe('x-1');
    expect(itemId('abc', '')).toBe('abc');
    expect(itemId(7, '')).toBe('7');
  });

  it.each([
    [{}, 'id', 'missing'],
    [{ id: null }, 'id', 'not_scalar'],
    [{ id: '' }, 'id', 'empty'],
    [{ id: '   ' }, 'id', 'empty'],
    [{ id: { value: 1 } }, 'id', 'not_scalar'],
    [{ id: [1] }, 'id', 'not_scalar'],
    [{ id: true }, 'id', 'not_scalar'],
    [{ id: 1.5 }, 'id', 'not_integer'],
    [{ id: 2 ** 60 }, 'id', 'unsafe_integer'],
    [{ id: 1 }, 'a..b', 'invalid_path'],
    [null, 'id', 'missing'],
    [{ toString: 'x' }, 'constructor', 'missing'],
  ])('rejects %j at %s (%s)', (item, field, problem) => {
    expect(itemId(item, field)).toBeNull();
    const result = resolveItemId(item, field);
    expect(result).toMatchObject({ ok: false, problem });
    expect(result.ok || result.message.length).toBeGreaterThan(10);
  });

  it('keeps strings exactly as sent', () => {
    expect(itemId({ id: ' 42' }, 'id')).toBe(' 42');
    expect(itemId({ id: '042' }, 'id')).not.toBe(itemId({ id: 42 }, 'id'));
  });

  it('hashes over-long ids', () => {
    const id = itemId({ id: 'x'.repeat(ITEM_ID_MAX_CHARS + 1) }, 'id');
    expect(id).toMatch(/^h:[0-9a-f]{64}$/);
    expect(itemId({ id: 'x'.repeat(ITEM_ID_MAX_CHARS) }, 'id')).toHaveLength(ITEM_ID_MAX_CHARS);
  });
});

describe('webhookFieldLookup', () => {
  const item = JSON.parse(`{
    "title": "Build #12 {status}",
    "user": { "name": "Ann", "age": 41, "admin": false, "manager": null },
    "tags": ["ci", "red"],
    "nested": { "list": [1, { "a": "b" }], "empty": {} }
  }`) as unknown;
  const get = webhookFieldLookup(item);

  it('renders scalars as strings and null as empty', () => {
    expect(get('title')).toBe('Build #12 {status}');
    expect(get('user.name')).toBe('Ann');
    expect(get('user.age')).toBe('41');
    expect(get('user.admin')).toBe('false');
    expect(get('user.manager')).toBe('');
    expect(get('tags.0')).toBe('ci');
  });

  it('renders objects and arrays as compact JSON', () => {
    expect(get('tags')).toBe('["ci","red"]');
    expect(get('nested')).toBe('{"list":[1,{"a":"b"}],"empty":{}}');
    expect(get('nested.list.1')).toBe('{"a":"b"}');
  });

  it('returns undefined when the path does not exist', () => {
    expect(get('missing')).toBeUndefined();
    expect(get('user.name.first')).toBeUndefined();
    expect(get('tags.2')).toBeUndefined();
    expect(get('tags.length')).toBeUndefined();
    expect(get('user.constructor')).toBeUndefined();
    expect(get('user..name')).toBeUndefined();
    expect(get('')).toBeUndefined();
  });

  it('tolerates spaces around the placeholder and non-object items', () => {
    expect(get(' user.name ')).toBe('Ann');
    expect(webhookFieldLookup('plain')('x')).toBeUndefined();
    expect(webhookFieldLookup(null)('x')).toBeUndefined();
  });
});

describe('renderFieldValue', () => {
  it('handles every JSON type and refuses what is not data', () => {
    expect(renderFieldValue('s')).toBe('s');
    expect(renderFieldValue(0)).toBe('0');
    expect(renderFieldValue(true)).toBe('true');
    expect(renderFieldValue(null)).toBe('');
    expect(renderFieldValue([])).toBe('[]');
    expect(renderFieldValue(undefined)).toBeUndefined();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(renderFieldValue(cyclic)).toBeUndefined();
  });
});

describe('selectItems', () => {
  it('returns items with ids, skips those without, and counts duplicates', () => {
    const body = JSON.parse(`{"data": {"items": [
      {"id": 1, "n": "a"}, {"id": "1", "n": "dup"}, {"n": "no id"}, {"id": 2.5}, {"id": "2"}, {"id": 2}
    ]}}`) as unknown;
    const result = selectItems(body, { itemsPath: 'data.items', idField: 'id' });
    expect(result).toEqual({
      ok: true,
      items: [
        { id: '1', item: { id: 1, n: 'a' } },
        { id: '2', item: { id: '2' } },
      ],
      skipped: [
        { index: 2, problem: 'missing', message: expect.stringContaining('id_field "id" is missing') },
        { index: 3, problem: 'not_integer', message: expect.stringContaining('2.5') },
      ],
      duplicates: 2,
    });
  });

  it('passes path errors through', () => {
    expect(selectItems({ data: {} }, { itemsPath: 'data', idField: 'id' })).toMatchObject({
      ok: false,
      code: 'WEBHOOK_ITEMS_NOT_ARRAY',
    });
    expect(selectItems([], { itemsPath: '', idField: 'a..b' })).toMatchObject({
      ok: false,
      code: 'WEBHOOK_PATH_INVALID',
    });
  });
});
