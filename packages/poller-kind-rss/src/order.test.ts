import { describe, expect, it } from 'vitest';
import { orderOldestFirst } from './order.js';

const at = (day: number) => new Date(Date.UTC(2024, 0, day));

describe('orderOldestFirst', () => {
  it('sorts dated items oldest first whatever the feed order', () => {
    const items = [
      { id: 'b', published: at(2) },
      { id: 'd', published: at(4) },
      { id: 'a', published: at(1) },
      { id: 'c', published: at(3) },
    ];
    expect(orderOldestFirst(items).map((item) => item.id)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('reverses the feed order for undated items', () => {
    const items = [{ id: 'new' }, { id: 'mid', published: undefined }, { id: 'old' }];
    expect(orderOldestFirst(items).map((item) => item.id)).toEqual(['old', 'mid', 'new']);
  });

  it('keeps undated items in their reversed slots and ties in reversed feed order', () => {
    const items = [
      { id: 'x', published: at(5) },
      { id: 'undated-1' },
      { id: 'tie-newer-in-feed', published: at(2) },
      { id: 'tie-older-in-feed', published: at(2) },
      { id: 'undated-2' },
      { id: 'y', published: at(1) },
    ];
    expect(orderOldestFirst(items).map((item) => item.id)).toEqual([
      'y',
      'undated-2',
      'tie-older-in-feed',
      'tie-newer-in-feed',
      'undated-1',
      'x',
    ]);
  });

  it('treats an Invalid Date as undated and does not modify its input', () => {
    const items = [
      { id: 'b', published: new Date(Number.NaN) },
      { id: 'a', published: at(1) },
    ];
    const copy = [...items];
    expect(orderOldestFirst(items).map((item) => item.id)).toEqual(['a', 'b']);
    expect(items).toEqual(copy);
  });
});
