import { describe, expect, it } from 'vitest';
import { RSS_PLACEHOLDERS, rssTemplateFields } from './template.js';

describe('rssTemplateFields', () => {
  it('provides every placeholder as a string', () => {
    const fields = rssTemplateFields(
      {
        id: 'urn:1',
        title: 'Hello',
        link: 'https://example.com/1',
        published: new Date('2024-05-01T12:00:00Z'),
        summary: 'Sum',
        author: 'Ann',
      },
      { title: 'Feed' },
    );
    expect(fields).toEqual({
      title: 'Hello',
      link: 'https://example.com/1',
      published: '2024-05-01T12:00:00.000Z',
      summary: 'Sum',
      author: 'Ann',
      feed_title: 'Feed',
      id: 'urn:1',
    });
    expect(Object.keys(fields).toSorted()).toEqual([...RSS_PLACEHOLDERS].toSorted());
  });

  it('renders missing values as empty strings', () => {
    expect(rssTemplateFields({ id: 'h:1', title: '(untitled)' }, undefined)).toEqual({
      title: '(untitled)',
      link: '',
      published: '',
      summary: '',
      author: '',
      feed_title: '',
      id: 'h:1',
    });
  });

  it('lists the spec placeholders first', () => {
    expect(RSS_PLACEHOLDERS.slice(0, 2)).toEqual(['title', 'link']);
  });
});
