package org.apache.iceberg.rest;

import java.lang.reflect.Method;
import org.apache.iceberg.util.PropertyUtil;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

/**
 * Same as the fixture's RESTCatalogServer main, but the HTTP connector binds to one host
 * (env REST_HOST, default 127.0.0.1) instead of all interfaces. Backend catalog setup
 * (CATALOG_* env vars -> properties) is the fixture's own, invoked reflectively.
 */
public final class LoopbackRESTCatalogServer {
  private LoopbackRESTCatalogServer() {}

  public static void main(String[] args) throws Exception {
    String host = System.getenv().getOrDefault("REST_HOST", "127.0.0.1");

    RESTCatalogServer fixture = new RESTCatalogServer();
    Method init = RESTCatalogServer.class.getDeclaredMethod("initializeBackendCatalog");
    init.setAccessible(true);
    RESTCatalogServer.CatalogContext ctx = (RESTCatalogServer.CatalogContext) init.invoke(fixture);

    int port = PropertyUtil.propertyAsInt(ctx.configuration(), RESTCatalogServer.REST_PORT, 8181);

    RESTCatalogAdapter adapter = new RESTServerCatalogAdapter(ctx);
    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
    context.insertHandler(new GzipHandler());

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(host);
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    server.join();
  }
}
