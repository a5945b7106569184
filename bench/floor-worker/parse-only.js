// For information (bench:ingest): the cost of reading and parsing the body alone — no storage.
export default {
  async fetch(request) {
    await request.json();
    return new Response(null, { status: 202 });
  },
};
