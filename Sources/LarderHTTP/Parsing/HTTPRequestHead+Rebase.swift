extension HTTPRequestHead {
    /// The same request with the first `count` bytes of its path removed
    /// (a mounted API: `/ns/w3/store/k` seen as `/store/k`). `count` must
    /// fall on a character boundary inside the path.
    public func droppingPathPrefix(bytes count: Int) -> HTTPRequestHead {
        let utf8 = target.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: count)
        return HTTPRequestHead(method: method, version: version, target: String(target[start...]), headers: headers,
                               contentLength: contentLength, isChunked: isChunked, expectsContinue: expectsContinue,
                               keepAlive: keepAlive)
    }
}
