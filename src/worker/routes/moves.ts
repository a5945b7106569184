// Admin routes of project moves (SPEC §7; docs/scaling.md "Moving a project"): ask for a move of a
// project to another database, and read how far it got. Mounted under the admin routes (their guard).
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../env.ts";
import { apiError, validBody } from "../errors.ts";
import { directoryDb } from "../databases.ts";
import { findMove } from "../db/moves.ts";
import { moveBody, startMove } from "../moves/start.ts";
import { sendMoveJob } from "../queues/rollup-jobs.ts";

const MoveBody = z.object({
  /** The database to move the project to (SPEC §7): a binding name of the deployment (GET /v1/admin/databases). */
  to: z.string().min(1).max(64),
});

export const moveRoutes = new Hono<AppEnv>();

/** 202 with the move; its steps run as jobs on the rollup queue (the cron continues a move whose job was lost). */
moveRoutes.post("/projects/:id/move", validBody(MoveBody), async (c) => {
  const move = await startMove(c.env, c.req.param("id"), c.req.valid("json").to, Date.now());
  await sendMoveJob(c.env, move.move_id);
  return c.json(moveBody(move), 202, { Location: `/v1/admin/moves/${move.move_id}` });
});

moveRoutes.get("/moves/:id", async (c) => {
  const move = await findMove(directoryDb(c.env), c.req.param("id"));
  if (!move) throw apiError("NOT_FOUND", "no such move");
  return c.json(moveBody(move), 200);
});
