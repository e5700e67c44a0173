// A loopback feed server in a child process (so its CPU is not the daemon's): `/feed/<i>` answers 200 with
// one item and an ETag the first time, then 304 to that ETag, as an unchanged real feed does.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(import.meta.url);

const feedBody = (i) =>
  `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Feed ${i}</title>` +
  `<item><guid>feed-${i}-1</guid><title>Post 1</title><link>https://example.org/${i}/1</link></item></channel></rss>`;

function serveFeeds() {
  const server = createServer((req, res) => {
    const i = Number(req.url.split('/')[2]);
    const etag = `"f${i}"`;
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/rss+xml; charset=utf-8', etag });
    res.end(feedBody(i));
  });
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
}

/** Starts the feed server process; `url(i)` is feed i, `stop()` ends the process. */
export async function startFeedServer() {
  const child = fork(here, ['--serve-feeds'], { stdio: 'inherit' });
  const { port } = await new Promise((resolve) => child.once('message', resolve));
  return { port, url: (i) => `http://127.0.0.1:${port}/feed/${i}`, stop: () => child.kill() };
}

if (process.argv[1] === here && process.argv[2] === '--serve-feeds') serveFeeds();
