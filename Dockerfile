# Multi-stage build producing one small static image with the three programs:
#   /worker    the fleet worker        /submit    the producer
#   /extractq  the toolbox (one-shot extract, status, dlq, results, the LLM simulator)
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
RUN go build -trimpath -ldflags="-s -w" -o /out/worker ./cmd/worker \
 && go build -trimpath -ldflags="-s -w" -o /out/submit ./cmd/submit \
 && go build -trimpath -ldflags="-s -w" -o /out/extractq ./cmd/extractq

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /
COPY examples/ /examples/
USER 65532:65532
ENTRYPOINT ["/worker"]
CMD ["run"]
