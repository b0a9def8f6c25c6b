import { z } from 'zod';

/** The dashboard `run` and `dashboard` serve: page, JSON API, event stream and /metrics. */
export const DashboardConfig = z
  .object({
    host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe('loopback needs no token; any other address requires the bearer token'),
    port: z.number().int().min(0).max(65535).default(8788).describe('0 picks a free port'),
    tokenEnv: z
      .string()
      .min(1)
      .default('BIOALCHEMY_DASHBOARD_TOKEN')
      .describe('environment variable holding the bearer token (required off loopback)'),
    refreshMs: z
      .number()
      .int()
      .min(250)
      .default(2000)
      .describe('how often the panels are queried again while a page is open'),
    windowSeconds: z
      .number()
      .int()
      .min(60)
      .default(3600)
      .describe('default time window of the time-series panels (a page may ask for up to a week)'),
  })
  .strict();
export type DashboardConfig = z.infer<typeof DashboardConfig>;
