# A static ktrace (CGO_ENABLED=0) on a distroless base: CA certificates
# for OTLP over TLS, /tmp, nothing else. Build: deploy/build-image.sh.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/ktrace ./cmd/ktrace

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/ktrace /ktrace
ENTRYPOINT ["/ktrace"]
