import { describe, expect, it } from 'vitest';
import type { RegistryEndpoint } from '../../../providers/endpoint.js';

import { catalogOf } from './models.js';

const endpoint = (lane: string, adapter: string, model: string, responses: boolean): RegistryEndpoint =>
  ({
    lane,
    adapter,
    model,
    provider_model_id: model,
    release_date: '2024-05-13',
    capabilities: {
      chat: true,
      embeddings: false,
      responses,
      images: false,
      moderations: false,
      tools: true,
      streaming: true,
      reasoning: false,
    },
  }) as unknown as RegistryEndpoint;

describe('GET /v1/models catalog', () => {
  it('lists canonical ids then provider-pinned ids', () => {
    const ids = catalogOf([
      endpoint('openai', 'openai', 'gpt-4o', true),
      endpoint('azure', 'azure', 'gpt-4o', true),
    ]).map((m) => m.id);
    expect(ids).toEqual(['gpt-4o', 'openai/gpt-4o', 'azure/gpt-4o']);
  });

  it('reports responses false for deployment-host endpoints (SPEC 4.7), whatever the catalog row says', () => {
    const models = catalogOf([
      endpoint('azure', 'azure', 'gpt-4o', true),
      endpoint('azure-gov', 'azure-gov', 'gpt-4.1', true),
    ]);
    for (const m of models) expect(m.capabilities.responses, m.id).toBe(false);
    const mixed = catalogOf([
      endpoint('openai', 'openai', 'gpt-4o', true),
      endpoint('azure', 'azure', 'gpt-4o', true),
    ]);
    expect(mixed.find((m) => m.id === 'gpt-4o')?.capabilities.responses).toBe(true);
    expect(mixed.find((m) => m.id === 'azure/gpt-4o')?.capabilities.responses).toBe(false);
  });
});
