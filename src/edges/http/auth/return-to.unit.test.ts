import { describe, expect, it } from 'vitest';
import { parseCookies, serializeCookie } from '../cookies.js';
import { safeReturnPath } from './return-to.js';

describe('safe return path', () => {
  it('keeps a relative path on this origin', () => {
    for (const path of ['/', '/keys', '/orgs/org_1/keys?tab=dev#top', '/a/../b'])
      expect(safeReturnPath(path)).toBe(path);
  });

  it('answers / for anything that could leave the origin', () => {
    for (const path of [
      undefined,
      '',
      'keys',
      'https://evil.example',
      'javascript:alert(1)',
      '//evil.example',
      '///evil.example',
      '/\\evil.example',
      '/\t/evil.example',
      '/\n/evil.example',
      '/..//evil.example',
      `/${'a'.repeat(3000)}`,
    ])
      expect(safeReturnPath(path)).toBe('/');
  });
});

describe('cookies', () => {
  it('are HttpOnly and SameSite=Lax, Secure when asked', () => {
    expect(serializeCookie('a', 'b', { path: '/x', maxAge: 60, secure: true })).toBe(
      'a=b; Path=/x; Max-Age=60; HttpOnly; SameSite=Lax; Secure',
    );
    expect(serializeCookie('a', '', { path: '/', maxAge: -5, secure: false })).toBe(
      'a=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax',
    );
  });

  it('parse the first value of each name, and count repeats', () => {
    const cookies = parseCookies('a=1; b=x=y;a=2; junk');
    expect([cookies.get('a'), cookies.get('b'), cookies.get('junk'), cookies.get('c')]).toEqual([
      '1',
      'x=y',
      undefined,
      undefined,
    ]);
    expect([cookies.count('a'), cookies.count('b'), cookies.count('c')]).toEqual([2, 1, 0]);
  });
});
