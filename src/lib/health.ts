export interface DependencyState {
  status: 'up' | 'down';
  latency_ms?: number;
  detail?: string;
}

type Check = () => Promise<void>;

/** Dependencies each role registers; /healthz and gRPC HealthService.Ping report all of them. */
export class HealthRegistry {
  private readonly checks = new Map<string, Check>();

  register(name: string, check: Check): void {
    this.checks.set(name, check);
  }

  async report(timeoutMs = 2_000): Promise<{ ok: boolean; dependencies: Record<string, DependencyState> }> {
    const entries = await Promise.all(
      [...this.checks].map(async ([name, check]): Promise<[string, DependencyState]> => {
        const started = performance.now();
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            check(),
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
            }),
          ]);
          return [name, { status: 'up', latency_ms: Math.round((performance.now() - started) * 10) / 10 }];
        } catch (err) {
          return [name, { status: 'down', detail: err instanceof Error ? err.message : String(err) }];
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    const dependencies = Object.fromEntries(entries);
    return { ok: entries.every(([, s]) => s.status === 'up'), dependencies };
  }
}
