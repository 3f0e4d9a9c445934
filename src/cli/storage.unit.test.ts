import { describe, expect, it } from 'vitest';
import { configSchema } from '../config/config.js';
import { natsBusOptions } from './storage.js';

const config = (env: Record<string, string>) =>
  configSchema.parse({ SVC_NATS_URL: 'nats://127.0.0.1:4222', ...env });

describe('the NATS bus from the configuration', () => {
  it('keeps the production names by default', () => {
    expect(natsBusOptions(config({}))).toEqual({ streamNamePrefix: 'SVC_', replicas: 1 });
  });

  it('gives a stream prefix of its own subjects of its own: two streams may not share subjects', () => {
    expect(natsBusOptions(config({ SVC_NATS_STREAM_PREFIX: 'DEPLOYA_' }))).toMatchObject({
      streamNamePrefix: 'DEPLOYA_',
      subjectPrefix: 'deploya',
    });
    expect(
      natsBusOptions(
        config({ SVC_NATS_STREAM_PREFIX: 'DEPLOYA_', SVC_NATS_SUBJECT_PREFIX: 'a1', SVC_NATS_REPLICAS: '3' }),
      ),
    ).toEqual({ streamNamePrefix: 'DEPLOYA_', subjectPrefix: 'a1', replicas: 3 });
  });
});
