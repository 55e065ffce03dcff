import LarderStorage

/// The operations over one namespace's store, made per request for the
/// store of the namespace the request's key works in (namespaces come and
/// go, so nothing is kept per namespace here). Each is made when asked
/// for: a request uses one or two, and making all eleven was a dozen
/// reference counts on every GetObject.
struct S3Operations {
    let store: any ValueStore
    let maxObjectBytes: Int64

    init(store: any ValueStore, maxObjectBytes: Int64) {
        self.store = store
        self.maxObjectBytes = maxObjectBytes
    }

    var buckets: BucketOperations { BucketOperations(store: store) }
    var objects: ObjectOperations { ObjectOperations(store: store, buckets: buckets, maxObjectBytes: maxObjectBytes) }
    var listing: ListObjectsOperation { ListObjectsOperation(store: store, buckets: buckets) }
    var deleteObjects: DeleteObjectsOperation { DeleteObjectsOperation(store: store, buckets: buckets) }
    var copyObject: CopyObjectOperation { CopyObjectOperation(store: store, buckets: buckets) }
    var multipart: MultipartOperations { MultipartOperations(store: store, buckets: buckets, objects: objects) }
    var completion: MultipartCompletion { MultipartCompletion(store: store, maxObjectBytes: maxObjectBytes) }
    var fixed: FixedSubresources { FixedSubresources(store: store, buckets: buckets) }
    var objectAttributes: GetObjectAttributesOperation { GetObjectAttributesOperation(store: store, buckets: buckets) }
    var tagging: ObjectTaggingOperation { ObjectTaggingOperation(store: store, buckets: buckets, copyObject: copyObject) }
    var settings: BucketSettingsOperations { BucketSettingsOperations(store: store, buckets: buckets) }
}
