/**
 * The control-plane listings of the fake managed runtime (ListFoundationModels and
 * ListInferenceProfiles, in the wire shape of the real service), for the catalog collector's tests.
 * Inference profiles are paged two at a time so the collector has to follow nextToken.
 */

export interface FoundationModelSummary {
  modelArn: string;
  modelId: string;
  modelName: string;
  providerName: string;
  inputModalities: string[];
  outputModalities: string[];
  responseStreamingSupported?: boolean;
  customizationsSupported?: string[];
  inferenceTypesSupported: string[];
  modelLifecycle: { status: string };
}

export interface InferenceProfileSummary {
  inferenceProfileName: string;
  inferenceProfileId: string;
  inferenceProfileArn: string;
  description?: string;
  models: { modelArn: string }[];
  status: string;
  type: string;
}

export interface ControlPlaneListing {
  models?: FoundationModelSummary[];
  profiles?: InferenceProfileSummary[];
  /** The credential lacks the list-inference-profiles action (SPEC 5). */
  profilesDenied?: boolean;
}

const PAGE = 2;

const json = { 'content-type': 'application/json' };

export const controlPlaneAnswer = (
  listing: ControlPlaneListing,
  url: string,
): { status: number; headers: Record<string, string>; body: unknown } => {
  const [path, search = ''] = url.split('?', 2) as [string, string?];
  const query = new URLSearchParams(search);
  if (path === '/foundation-models')
    return { status: 200, headers: json, body: { modelSummaries: listing.models ?? [] } };
  if (path === '/inference-profiles') {
    if (listing.profilesDenied) {
      return {
        status: 403,
        headers: { ...json, 'x-amzn-errortype': 'AccessDeniedException:http://internal.amazon.com/coral/' },
        body: {
          message:
            'User: arn:aws:iam::123456789012:user/ci is not authorized to perform: bedrock:ListInferenceProfiles',
        },
      };
    }
    const all = listing.profiles ?? [];
    const start = Number(query.get('nextToken') ?? '0');
    const page = all.slice(start, start + PAGE);
    const next = start + PAGE < all.length ? String(start + PAGE) : undefined;
    return {
      status: 200,
      headers: json,
      body: { inferenceProfileSummaries: page, ...(next ? { nextToken: next } : {}) },
    };
  }
  return {
    status: 404,
    headers: { ...json, 'x-amzn-errortype': 'UnknownOperationException' },
    body: { message: `no operation at ${path}` },
  };
};

/** A foundation model summary with the defaults of an ordinary on-demand text model. */
export const foundationModel = (
  modelId: string,
  overrides: Partial<FoundationModelSummary> = {},
  region = 'us-east-1',
): FoundationModelSummary => ({
  modelArn: `arn:aws:bedrock:${region}::foundation-model/${modelId}`,
  modelId,
  modelName: modelId,
  providerName: modelId.split('.')[0] ?? 'unknown',
  inputModalities: ['TEXT'],
  outputModalities: ['TEXT'],
  responseStreamingSupported: true,
  customizationsSupported: [],
  inferenceTypesSupported: ['ON_DEMAND'],
  modelLifecycle: { status: 'ACTIVE' },
  ...overrides,
});

export const inferenceProfile = (
  profileId: string,
  modelIds: string[],
  regions = ['us-east-1', 'us-west-2'],
): InferenceProfileSummary => ({
  inferenceProfileName: profileId,
  inferenceProfileId: profileId,
  inferenceProfileArn: `arn:aws:bedrock:us-east-1:123456789012:inference-profile/${profileId}`,
  models: modelIds.flatMap((id) =>
    regions.map((r) => ({ modelArn: `arn:aws:bedrock:${r}::foundation-model/${id}` })),
  ),
  status: 'ACTIVE',
  type: 'SYSTEM_DEFINED',
});
