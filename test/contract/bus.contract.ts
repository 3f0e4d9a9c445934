import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Bus,
  type BusMessage,
  BusUnavailableError,
  type ConsumeOptions,
  type ConsumerHandle,
  readDeadLetter,
} from '../../src/events/bus.js';
import { DLQ_SUBJECT, InvalidSubjectError, subjects } from '../../src/events/subjects.js';

/**
 * The bus contract (SPEC.md sections 3 and 6), run against every adapter so
 * the embedded default and JetStream behave the same.
 */

export interface BusFixture {
  /** A bus on this run's shared backing (same streams or database); may be opened many times. */
  open(): Promise<Bus>;
  /** A bus pointed at a server that refuses or never answers. */
  openUnreachable(address: { host: string; port: number }, timeoutMs: number): Promise<Bus>;
  /** Removes everything the run created. */
  cleanup(): Promise<void>;
}

interface Delivery {
  subject: string;
  messageId: string;
  text: string;
  deliveryCount: number;
  headers: Readonly<Record<string, string>>;
  at: number;
}

const decoder = new TextDecoder();
const record = (m: BusMessage): Delivery => ({
  subject: m.subject,
  messageId: m.messageId,
  text: decoder.decode(m.data),
  deliveryCount: m.deliveryCount,
  headers: m.headers,
  at: Date.now(),
});

const waitFor = async (what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> => {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const timed = async (work: Promise<unknown>): Promise<{ error: unknown; ms: number }> => {
  const started = Date.now();
  const error = await work.then(
    () => undefined,
    (err: unknown) => err,
  );
  return { error, ms: Date.now() - started };
};

/** A TCP server that accepts connections and never says a word. */
const silentServer = async (): Promise<{ port: number; close(): Promise<void> }> => {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};

export const busContract = (adapter: string, setup: () => Promise<BusFixture>): void => {
  describe(`bus contract: ${adapter}`, () => {
    let fixture: BusFixture;
    let bus: Bus;
    const handles: ConsumerHandle[] = [];
    let n = 0;
    const org = () => `org${++n}`;

    beforeAll(async () => {
      fixture = await setup();
      bus = await fixture.open();
    });
    afterAll(async () => {
      await Promise.all(handles.map((h) => h.close()));
      await fixture?.cleanup();
    });

    const consume = async (
      on: Bus,
      name: string,
      filter: string,
      options: ConsumeOptions,
      handler: (m: BusMessage) => Promise<void>,
    ) => {
      const handle = await on.consume(name, filter, handler, options);
      handles.push(handle);
      return handle;
    };

    /** Dead letters whose original subject is `subject`, as seen by a fresh consumer of the DLQ. */
    const watchDeadLetters = async (name: string, subject: string) => {
      const seen: Delivery[] = [];
      await consume(bus, name, DLQ_SUBJECT, { ackWaitMs: 5_000, maxDeliveries: 5 }, async (m) => {
        if (readDeadLetter(m.headers)?.subject === subject) seen.push(record(m));
        await m.ack();
      });
      return seen;
    };

    it('ensureStreams is idempotent and health reports the adapter', async () => {
      await bus.ensureStreams();
      await bus.ensureStreams();
      expect(await bus.health()).toMatchObject({ ok: true, adapter: bus.adapter });
    });

    it('rejects subjects outside the tree and wildcards in a published subject', async () => {
      await expect(bus.publish('elsewhere.x', 'x', { messageId: 'x1' })).rejects.toBeInstanceOf(
        InvalidSubjectError,
      );
      await expect(bus.publish('svc.requests.a.*', 'x', { messageId: 'x2' })).rejects.toBeInstanceOf(
        InvalidSubjectError,
      );
      expect(() => subjects.request('a.b', 'r')).toThrow(InvalidSubjectError);
    });

    it('delivers every message at least once, each subject in publish order', async () => {
      const o = org();
      const perSubject = 40;
      const subjectsUsed = Array.from({ length: 5 }, (_, i) => subjects.request(o, `r${i}`));
      await Promise.all(
        subjectsUsed.map(async (subject, s) => {
          for (let i = 0; i < perSubject; i++) {
            const r = await bus.publish(subject, `${s}:${i}`, {
              messageId: `${o}-${s}-${i}`,
              headers: { 'X-Seq': `${i}` },
            });
            expect(r.duplicate).toBe(false);
          }
        }),
      );
      const got: Delivery[] = [];
      await consume(
        bus,
        `all_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 5_000, maxDeliveries: 5, batchSize: 16 },
        async (m) => {
          got.push(record(m));
          await m.ack();
        },
      );
      await waitFor('all messages', () => new Set(got.map((d) => d.messageId)).size === 5 * perSubject);
      for (const [s, subject] of subjectsUsed.entries()) {
        const firsts = got.filter((d) => d.subject === subject && d.deliveryCount === 1).map((d) => d.text);
        expect(firsts).toEqual(Array.from({ length: perSubject }, (_, i) => `${s}:${i}`));
      }
      expect(got.find((d) => d.messageId === `${o}-2-7`)?.headers['X-Seq']).toBe('7');
    });

    it('with perSubjectOrder false, hands out later messages of a subject while an earlier one is unsettled, in order', async () => {
      const o = org();
      const subject = subjects.request(o, 'one');
      for (let i = 0; i < 20; i++) await bus.publish(subject, `${i}`, { messageId: `${o}-${i}` });
      const got: Delivery[] = [];
      const held: BusMessage[] = [];
      await consume(
        bus,
        `unordered_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 10_000, maxDeliveries: 5, batchSize: 8, perSubjectOrder: false },
        async (m) => {
          got.push(record(m));
          held.push(m); // none settled yet: a subject-ordered consumer would stop at the first
        },
      );
      await waitFor('every message while none is settled', () => got.length === 20);
      expect(got.map((d) => d.text)).toEqual(Array.from({ length: 20 }, (_, i) => `${i}`));
      await Promise.all(held.map((m) => m.ack()));
    });

    it('brings a message left unacked back after ack_wait', async () => {
      const o = org();
      const subject = subjects.request(o, 'slow');
      const got: Delivery[] = [];
      await consume(
        bus,
        `unacked_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 500, maxDeliveries: 5 },
        async (m) => {
          got.push(record(m));
          if (m.deliveryCount > 1) await m.ack();
        },
      );
      await bus.publish(subject, 'once', { messageId: `${o}-1` });
      await waitFor('redelivery', () => got.length >= 2);
      expect(got.map((d) => d.deliveryCount).slice(0, 2)).toEqual([1, 2]);
      const gap = got[1]!.at - got[0]!.at;
      expect(gap).toBeGreaterThanOrEqual(400);
      expect(gap).toBeLessThan(5_000);
      await pause(800);
      expect(got).toHaveLength(2);
    });

    it('moves a message to the dead-letter subject after max deliveries, with its reason', async () => {
      const o = org();
      const subject = subjects.request(o, 'poison');
      const dead = await watchDeadLetters(`dlqwatch_${o}`, subject);
      const got: Delivery[] = [];
      await consume(
        bus,
        `poison_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 300, maxDeliveries: 3 },
        async (m) => {
          got.push(record(m));
        },
      );
      await bus.publish(subject, 'poison body', { messageId: `${o}-p`, headers: { 'X-Origin': 'test' } });
      await waitFor('dead letter', () => dead.length >= 1);
      const letter = readDeadLetter(dead[0]!.headers);
      expect(letter).toMatchObject({ reason: 'max_deliveries', subject, messageId: `${o}-p`, deliveries: 3 });
      expect(dead[0]!.text).toBe('poison body');
      expect(dead[0]!.headers['X-Origin']).toBe('test');
      await pause(900);
      expect(got.map((d) => d.deliveryCount)).toEqual([1, 2, 3]);
      expect(dead).toHaveLength(1);
    });

    it('dead-letters with the consumer-given reason, and on an explicit deadLetter', async () => {
      const o = org();
      const exhausted = subjects.request(o, 'exhausted');
      const invalid = subjects.request(o, 'invalid');
      const deadExhausted = await watchDeadLetters(`dlqa_${o}`, exhausted);
      const deadInvalid = await watchDeadLetters(`dlqb_${o}`, invalid);
      const got: Delivery[] = [];
      const options = { ackWaitMs: 300, maxDeliveries: 2, dlqReason: 'insert_exhausted' };
      await consume(bus, `reasons_${o}`, `svc.requests.${o}.>`, options, async (m) => {
        got.push(record(m));
        if (m.subject === invalid) await m.deadLetter('invalid_event');
      });
      await bus.publish(exhausted, 'e', { messageId: `${o}-e` });
      await bus.publish(invalid, 'i', { messageId: `${o}-i` });
      await waitFor('both dead letters', () => deadExhausted.length >= 1 && deadInvalid.length >= 1);
      expect(readDeadLetter(deadExhausted[0]!.headers)).toMatchObject({
        reason: 'insert_exhausted',
        deliveries: 2,
      });
      expect(readDeadLetter(deadInvalid[0]!.headers)).toMatchObject({
        reason: 'invalid_event',
        deliveries: 1,
      });
      await pause(700);
      expect(got.filter((d) => d.subject === invalid)).toHaveLength(1);
    });

    it('delivers a duplicate message id within the window once', async () => {
      const o = org();
      const subject = subjects.request(o, 'dup');
      const first = await bus.publish(subject, 'first', { messageId: `${o}-same` });
      const again = await bus.publish(subject, 'second', { messageId: `${o}-same` });
      const other = await fixture.open();
      const third = await other.publish(subject, 'third', { messageId: `${o}-same` });
      expect(first.duplicate).toBe(false);
      expect(again).toEqual({ duplicate: true, seq: first.seq });
      expect(third).toEqual({ duplicate: true, seq: first.seq });
      await bus.publish(subject, 'marker', { messageId: `${o}-marker` });
      const got: Delivery[] = [];
      await consume(
        bus,
        `dup_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 5_000, maxDeliveries: 5 },
        async (m) => {
          got.push(record(m));
          await m.ack();
        },
      );
      await waitFor('marker', () => got.some((d) => d.text === 'marker'));
      await pause(300);
      expect(got.map((d) => d.text)).toEqual(['first', 'marker']);
      await other.close();
    });

    it('publishMany stores a batch in the order given, each subject in order, with one result per message', async () => {
      const o = org();
      const perSubject = 30;
      const batch = Array.from({ length: 3 * perSubject }, (_, i) => ({
        subject: subjects.request(o, `r${i % 3}`),
        data: `${i % 3}:${Math.floor(i / 3)}`,
        messageId: `${o}-${i}`,
        headers: { 'X-Seq': `${i}` },
      }));
      const results = await bus.publishMany(batch);
      expect(results).toHaveLength(batch.length);
      expect(results.every((r) => !r.duplicate)).toBe(true);
      // Stored in the order given: sequence numbers rise with the batch position.
      for (let i = 1; i < results.length; i++) expect(results[i]!.seq).toBeGreaterThan(results[i - 1]!.seq);
      const got: Delivery[] = [];
      await consume(
        bus,
        `many_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 5_000, maxDeliveries: 5, batchSize: 16 },
        async (m) => {
          got.push(record(m));
          await m.ack();
        },
      );
      await waitFor('the whole batch', () => new Set(got.map((d) => d.messageId)).size === batch.length);
      for (let s = 0; s < 3; s++) {
        const firsts = got
          .filter((d) => d.subject === subjects.request(o, `r${s}`) && d.deliveryCount === 1)
          .map((d) => d.text);
        expect(firsts).toEqual(Array.from({ length: perSubject }, (_, i) => `${s}:${i}`));
      }
      expect(got.find((d) => d.messageId === `${o}-40`)?.headers['X-Seq']).toBe('40');
    });

    it('carries binary payloads byte for byte, published singly or in a batch', async () => {
      const o = org();
      const bytes = Uint8Array.from({ length: 512 }, (_, i) => (i * 7) % 256);
      await bus.publish(subjects.request(o, 'one'), bytes, { messageId: `${o}-one` });
      // A batch of payloads of every length and content, including empty ones and one of each byte
      // value, each delivered as published, never run into its neighbours.
      const mixed: (Uint8Array | string)[] = [
        new Uint8Array(0),
        bytes,
        'héllo ✓ 𝄞',
        '',
        Uint8Array.from({ length: 256 }, (_, i) => 255 - i),
        'x'.repeat(70_000),
      ];
      await bus.publishMany([
        { subject: subjects.request(o, 'many'), data: bytes, messageId: `${o}-many` },
        ...mixed.map((data, i) => ({
          subject: subjects.request(o, `mixed${i}`),
          data,
          messageId: `${o}-mixed-${i}`,
        })),
      ]);
      const got = new Map<string, Uint8Array>();
      await consume(
        bus,
        `binary_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 5_000, maxDeliveries: 5 },
        async (m) => {
          got.set(m.messageId, new Uint8Array(m.data));
          await m.ack();
        },
      );
      await waitFor('every message', () => got.size === 2 + mixed.length);
      expect(got.get(`${o}-one`)).toEqual(bytes);
      expect(got.get(`${o}-many`)).toEqual(bytes);
      for (const [i, data] of mixed.entries())
        expect(got.get(`${o}-mixed-${i}`)).toEqual(
          typeof data === 'string' ? new TextEncoder().encode(data) : data,
        );
    });

    it('publishMany dedupes ids seen before and repeated within the batch', async () => {
      const o = org();
      const subject = subjects.request(o, 'dup');
      const earlier = await bus.publish(subject, 'earlier', { messageId: `${o}-a` });
      const results = await bus.publishMany([
        { subject, data: 'a again', messageId: `${o}-a` },
        { subject, data: 'b', messageId: `${o}-b` },
        { subject, data: 'b again', messageId: `${o}-b` },
        { subject, data: 'c', messageId: `${o}-c` },
      ]);
      expect(results[0]).toEqual({ duplicate: true, seq: earlier.seq });
      expect(results[1]!.duplicate).toBe(false);
      expect(results[2]).toEqual({ duplicate: true, seq: results[1]!.seq });
      expect(results[3]!.duplicate).toBe(false);
      expect(results[3]!.seq).toBeGreaterThan(results[1]!.seq);
      // The same batch again, from another client: everything is a duplicate of what is stored.
      const other = await fixture.open();
      const again = await other.publishMany([
        { subject, data: 'b once more', messageId: `${o}-b` },
        { subject, data: 'c once more', messageId: `${o}-c` },
      ]);
      expect(again).toEqual([
        { duplicate: true, seq: results[1]!.seq },
        { duplicate: true, seq: results[3]!.seq },
      ]);
      await bus.publish(subject, 'marker', { messageId: `${o}-marker` });
      const got: Delivery[] = [];
      await consume(
        bus,
        `manydup_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 5_000, maxDeliveries: 5 },
        async (m) => {
          got.push(record(m));
          await m.ack();
        },
      );
      await waitFor('marker', () => got.some((d) => d.text === 'marker'));
      await pause(300);
      expect(got.map((d) => d.text)).toEqual(['earlier', 'b', 'c', 'marker']);
      await other.close();
    });

    it('publishMany of an empty batch stores nothing, and a batch with one bad subject is refused whole', async () => {
      const o = org();
      expect(await bus.publishMany([])).toEqual([]);
      await expect(
        bus.publishMany([
          { subject: subjects.request(o, 'ok'), data: 'never', messageId: `${o}-ok` },
          { subject: 'elsewhere.x', data: 'x', messageId: `${o}-bad` },
        ]),
      ).rejects.toBeInstanceOf(InvalidSubjectError);
      await bus.publish(subjects.request(o, 'ok'), 'marker', { messageId: `${o}-marker` });
      const got: Delivery[] = [];
      await consume(
        bus,
        `manyempty_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 5_000, maxDeliveries: 5 },
        async (m) => {
          got.push(record(m));
          await m.ack();
        },
      );
      await waitFor('marker', () => got.length >= 1);
      await pause(300);
      expect(got.map((d) => d.text)).toEqual(['marker']);
    });

    it('resumes a restarted durable consumer without loss', async () => {
      const o = org();
      const total = 100;
      const publishRange = async (on: Bus, from: number, to: number) => {
        for (let i = from; i < to; i++)
          await on.publish(subjects.request(o, `r${i % 7}`), `${i}`, { messageId: `${o}-${i}` });
      };
      await publishRange(bus, 0, total);
      const ackedByFirst = new Set<string>();
      let firstHandle: ConsumerHandle | undefined;
      let stopping: Promise<void> | undefined;
      const options = { ackWaitMs: 1_000, maxDeliveries: 10, batchSize: 10 };
      const first = await fixture.open();
      firstHandle = await first.consume(
        `resume_${o}`,
        `svc.requests.${o}.>`,
        async (m) => {
          if (stopping) return;
          await m.ack();
          ackedByFirst.add(decoder.decode(m.data));
          if (ackedByFirst.size === 40) stopping = firstHandle!.close();
        },
        options,
      );
      await waitFor('first consumer to stop', () => stopping !== undefined);
      await stopping;
      await first.close();
      // Published while no consumer runs: the durable consumer must still get these.
      await publishRange(bus, total, total + 20);

      const second = await fixture.open();
      const seenBySecond = new Set<string>();
      await consume(second, `resume_${o}`, `svc.requests.${o}.>`, options, async (m) => {
        seenBySecond.add(decoder.decode(m.data));
        await m.ack();
      });
      const all = Array.from({ length: total + 20 }, (_, i) => `${i}`);
      await waitFor('every message across both runs', () =>
        all.every((v) => ackedByFirst.has(v) || seenBySecond.has(v)),
      );
      expect([...ackedByFirst].filter((v) => seenBySecond.has(v))).toEqual([]);
      await pause(200);
      await second.close();
    });

    it('redelivers after the delay given to nak', async () => {
      const o = org();
      const got: Delivery[] = [];
      await consume(
        bus,
        `nak_${o}`,
        `svc.requests.${o}.>`,
        { ackWaitMs: 10_000, maxDeliveries: 5 },
        async (m) => {
          got.push(record(m));
          if (m.deliveryCount === 1) await m.nak(700);
          else await m.ack();
        },
      );
      await bus.publish(subjects.request(o, 'later'), 'x', { messageId: `${o}-n` });
      await waitFor('nak redelivery', () => got.length >= 2);
      expect(got[1]!.deliveryCount).toBe(2);
      const gap = got[1]!.at - got[0]!.at;
      expect(gap).toBeGreaterThanOrEqual(600);
      expect(gap).toBeLessThan(5_000);
    });

    it('raises BusUnavailableError within a bounded time when the server refuses or stays silent', async () => {
      const refused = await fixture.openUnreachable({ host: '127.0.0.1', port: 1 }, 1_500);
      const a = await timed(refused.publish(subjects.request('o', 'r'), 'x', { messageId: 'down-1' }));
      expect(a.error).toBeInstanceOf(BusUnavailableError);
      expect((a.error as BusUnavailableError).retryable).toBe(true);
      expect(a.ms).toBeLessThan(2_500);
      const many = await timed(
        refused.publishMany([{ subject: subjects.request('o', 'r'), data: 'x', messageId: 'down-3' }]),
      );
      expect(many.error).toBeInstanceOf(BusUnavailableError);
      expect(many.ms).toBeLessThan(2_500);
      expect(await refused.health()).toMatchObject({ ok: false });
      await refused.close();

      const silent = await silentServer();
      try {
        const mute = await fixture.openUnreachable({ host: '127.0.0.1', port: silent.port }, 1_000);
        const b = await timed(mute.publish(subjects.request('o', 'r'), 'x', { messageId: 'down-2' }));
        expect(b.error).toBeInstanceOf(BusUnavailableError);
        expect(b.ms).toBeGreaterThanOrEqual(900);
        expect(b.ms).toBeLessThan(2_500);
        await mute.close();
      } finally {
        await silent.close();
      }
    });
  });
};
