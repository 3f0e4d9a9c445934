import { describe, expect, it } from 'vitest';
import { encodeModelId, resolveRuntimeOrigin } from './origin.js';
import { signRequest } from './sign.js';

describe('origin resolution (SPEC 4.7)', () => {
  it('the connection base_url wins, then the lane default, then the regional host', () => {
    expect(
      resolveRuntimeOrigin('bedrock', 'https://vpce.example.com', 'https://lane.example.com', 'eu-west-1'),
    ).toEqual({
      ok: true,
      value: 'https://vpce.example.com',
    });
    expect(resolveRuntimeOrigin('bedrock', null, 'https://lane.example.com/', 'eu-west-1')).toEqual({
      ok: true,
      value: 'https://lane.example.com',
    });
    expect(resolveRuntimeOrigin('bedrock', null, null, 'eu-west-1')).toEqual({
      ok: true,
      value: 'https://bedrock-runtime.eu-west-1.amazonaws.com',
    });
    expect(resolveRuntimeOrigin('bedrock-gov', null, null, 'us-gov-west-1')).toEqual({
      ok: true,
      value: 'https://bedrock-runtime.us-gov-west-1.amazonaws.com',
    });
  });

  it('https://unused.invalid on the lane means none', () => {
    expect(resolveRuntimeOrigin('bedrock', null, 'https://unused.invalid', 'us-east-1')).toEqual({
      ok: true,
      value: 'https://bedrock-runtime.us-east-1.amazonaws.com',
    });
  });

  it('loopback HTTP is accepted; other HTTP, a path, a query or a fragment are refused', () => {
    expect(resolveRuntimeOrigin('bedrock', 'http://127.0.0.1:4010', null, 'us-east-1')).toEqual({
      ok: true,
      value: 'http://127.0.0.1:4010',
    });
    for (const bad of [
      'http://example.com',
      'https://x.example.com/v1',
      'https://x.example.com?a=1',
      'https://x.example.com#f',
    ]) {
      expect(resolveRuntimeOrigin('bedrock', bad, null, 'us-east-1').ok, bad).toBe(false);
      expect(resolveRuntimeOrigin('bedrock', null, bad, 'us-east-1').ok, bad).toBe(false);
    }
  });

  it('a region that cannot form a host name is refused rather than dialled', () => {
    expect(resolveRuntimeOrigin('bedrock', null, null, 'us-east-1.evil.com/x').ok).toBe(false);
  });

  it('model ids are encoded as one path segment, as the AWS SDK does', () => {
    expect(encodeModelId('anthropic.claude-3-haiku-20240307-v1:0')).toBe(
      'anthropic.claude-3-haiku-20240307-v1%3A0',
    );
    expect(encodeModelId('arn:aws:bedrock:us-east-1:1:inference-profile/us.x')).toBe(
      'arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x',
    );
  });
});

describe('signing', () => {
  it('service bedrock, the metadata region whatever the host, only the given headers signed', async () => {
    const headers = await signRequest({
      method: 'POST',
      url: 'http://127.0.0.1:9/model/m/converse',
      body: '{}',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      credentials: {
        access_key_id: 'AKIDEXAMPLE',
        secret_access_key: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
      },
      region: 'eu-central-1',
    });
    expect(headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-central-1\/bedrock\/aws4_request, SignedHeaders=accept;host;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    expect(Object.values(headers).join('\n')).not.toContain('wJalrXUtnFEMI');
  });
});
