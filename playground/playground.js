// Renders GraphiQL from the files this server ships (no CDN), with one tab per example query.
//
// With `?autorun` in the URL it also presses the run button once the first tab is loaded and
// copies what the result pane shows into <pre id="autorun-result" data-status="done">, so a
// headless browser's --dump-dom proves the whole path: page, assets, UI, /graphql, result.
(function () {
  'use strict';

  var tabs = JSON.parse(document.getElementById('tabs').textContent);
  // Queries and mutations over HTTP; subscriptions over a WebSocket (graphql-transport-ws) to
  // the same /graphql, with the pinned graphql-ws client.
  var url = new URL('/graphql', window.location.href);
  var wsUrl = new URL(url.href);
  wsUrl.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  var fetcher = GraphiQL.createFetcher({
    url: url.href,
    wsClient: graphqlWs.createClient({ url: wsUrl.href, lazy: true }),
  });
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultTabs: tabs,
      defaultQuery: tabs.length > 0 ? tabs[0].query : undefined,
    })
  );

  if (new URLSearchParams(window.location.search).has('autorun')) {
    autorun(60000);
  }

  function editorText(selector) {
    var element = document.querySelector(selector + ' .CodeMirror');
    return element && element.CodeMirror ? element.CodeMirror.getValue() : '';
  }

  function autorun(timeoutMs) {
    var out = document.createElement('pre');
    out.id = 'autorun-result';
    out.hidden = true;
    out.dataset.status = 'waiting';
    document.body.appendChild(out);
    var started = Date.now();
    var timer = setInterval(function () {
      var button = document.querySelector('.graphiql-execute-button');
      if (out.dataset.status === 'waiting' && button && editorText('.graphiql-query-editor')) {
        out.dataset.status = 'running';
        button.click();
      }
      var result = editorText('.result-window');
      if (result) {
        out.textContent = result;
        out.dataset.status = 'done';
        clearInterval(timer);
      } else if (Date.now() - started > timeoutMs) {
        out.dataset.status = 'timeout';
        clearInterval(timer);
      }
    }, 50);
  }
})();
