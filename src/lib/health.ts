export interface DependencyState {
  status: 'up' | 'down';
  latency_ms?: number;
  detail?: string;
}

type Check = () => Promise<void>;
type Report = () => Promise<Record<string, DependencyState>>;

/** Dependencies each role registers; /healthz and gRPC HealthService.Ping report all of them. */
export class HealthRegistry {
  private readonly checks = new Map<string, Check>();
  private readonly reports: Report[] = [];

  register(name: string, check: Check): void {
    this.checks.set(name, check);
  }

  /**
   * Another process's dependencies reported as this one's (a data process's): a name this process
   * checks itself keeps its own state unless the other one finds it down. A source that does not
   * answer adds nothing; register a check of its own to report that.
   */
  include(report: Report): void {
    this.reports.push(report);
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
    const dependencies: Record<string, DependencyState> = Object.fromEntries(entries);
    const others = await Promise.all(this.reports.map((r) => r().catch(() => ({}))));
    for (const other of others) {
      for (const [name, state] of Object.entries(other)) {
        if (!dependencies[name] || state.status === 'down') dependencies[name] = state;
      }
    }
    return { ok: Object.values(dependencies).every((s) => s.status === 'up'), dependencies };
  }
}
