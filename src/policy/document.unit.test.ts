import { describe, expect, it } from 'vitest';
import { ServiceError } from '../lib/errors.js';
import { globMatch, parsePolicyDocument } from './document.js';

const refused = (input: unknown): ServiceError => {
  try {
    parsePolicyDocument(input);
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('accepted');
};

// SPEC 1.9: the policy document, versioned so it can grow.
describe('policy document', () => {
  it('takes every rule of schema version 1', () => {
    const doc = {
      schema_version: 1,
      description: 'EU data stays in EU lanes',
      providers: { allow: ['azure-eu*', 'bedrock'], deny: ['openai'] },
      models: { deny: ['*-preview'] },
      routes: { deny: ['/v1/images/*'] },
      max_tokens: 4096,
      payload_capture: false,
      rate_limits: { requests_per_minute: 60, tokens_per_minute: 100000 },
    };
    expect(parsePolicyDocument(doc)).toEqual(doc);
    expect(parsePolicyDocument({ schema_version: 1, providers: null })).toEqual({
      schema_version: 1,
      providers: null,
    });
  });

  it('refuses an unknown field by name', () => {
    const err = refused({ schema_version: 1, max_token: 5 });
    expect(err.code).toBe('bad_request');
    expect(err.message).toContain('unknown field max_token');
    expect(refused({ schema_version: 1, providers: { alow: ['x'] } }).message).toContain('alow in providers');
  });

  it('refuses another schema version, a missing one and a non-object', () => {
    expect(refused({ schema_version: 2 }).message).toBe('schema_version must be 1');
    expect(refused({}).message).toBe('schema_version must be 1');
    expect(refused('x').code).toBe('bad_request');
    expect(refused(null).code).toBe('bad_request');
  });

  it('refuses bad values, naming the field', () => {
    expect(refused({ schema_version: 1, max_tokens: 0 }).param).toBe('max_tokens');
    expect(refused({ schema_version: 1, max_tokens: 1.5 }).param).toBe('max_tokens');
    expect(refused({ schema_version: 1, rate_limits: { requests_per_minute: -1 } }).param).toBe(
      'rate_limits.requests_per_minute',
    );
    expect(refused({ schema_version: 1, models: { deny: ['a b'] } }).param).toBe('models.deny.0');
    expect(refused({ schema_version: 1, models: { deny: 'gpt' } }).param).toBe('models.deny');
  });

  it('refuses a route pattern that matches no gateway route', () => {
    const err = refused({ schema_version: 1, routes: { deny: ['/v1/chat/completion'] } });
    expect(err.message).toContain('matches no gateway route');
    expect(err.param).toBe('routes.deny');
  });

  it('matches globs whole, case-insensitively, with other characters literal', () => {
    expect(globMatch('gpt-4o*', 'GPT-4o-mini')).toBe(true);
    expect(globMatch('gpt-4o', 'gpt-4o-mini')).toBe(false);
    expect(globMatch('a.b', 'axb')).toBe(false);
    expect(globMatch('m?', 'm1')).toBe(true);
    expect(globMatch('m?', 'm12')).toBe(false);
    expect(globMatch('*', '')).toBe(true);
    expect(globMatch('?', '')).toBe(false);
    expect(globMatch('a*b*c', 'aXXbYYc')).toBe(true);
    expect(globMatch('a*b*c', 'aXXbYY')).toBe(false);
    expect(globMatch('*-preview', 'gpt-4o-preview')).toBe(true);
    expect(globMatch('/v1/images/*', '/v1/images/edits')).toBe(true);
  });

  it('matches a pattern built to backtrack in linear-ish time, and refuses more than 8 stars', () => {
    // As a backtracking regular expression this takes minutes; here it is a few thousand steps.
    expect(globMatch('*?'.repeat(8), 'us.anthropic.claude-3-5-sonnet-20241022-v2:0')).toBe(true);
    expect(globMatch(`${'*?'.repeat(8)}x`, 'us.anthropic.claude-3-5-sonnet-20241022-v2:0')).toBe(false);
    expect(refused({ schema_version: 1, models: { deny: ['*?'.repeat(9)] } }).message).toMatch(/at most 8/);
  });
});
