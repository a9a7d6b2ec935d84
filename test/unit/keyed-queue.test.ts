import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { KeyedQueue } from '../../src/watcher/keyed-queue.js';

it('runs tasks of one key in order and different keys concurrently, within the limit', async () => {
  const q = new KeyedQueue(3);
  const order: string[] = [];
  let running = 0;
  let peak = 0;
  const task = (label: string, ms: number) => async () => {
    running++;
    peak = Math.max(peak, running);
    await sleep(ms);
    order.push(label);
    running--;
  };
  q.push('a', task('a1', 30));
  q.push('a', task('a2', 1));
  q.push('b', task('b1', 5));
  for (let i = 0; i < 6; i++) q.push(`k${i}`, task(`k${i}`, 10));
  await q.onIdle();
  expect(order.indexOf('a1')).toBeLessThan(order.indexOf('a2'));
  expect(order.indexOf('b1')).toBeLessThan(order.indexOf('a1'));
  expect(peak).toBe(3);
  expect(q.depth).toBe(0);
});

it('keeps a key usable after a task throws', async () => {
  const q = new KeyedQueue(1);
  const ran: string[] = [];
  q.push('a', async () => {
    throw new Error('boom');
  });
  q.push('a', async () => {
    ran.push('after');
  });
  await q.onIdle();
  expect(ran).toEqual(['after']);
});
